import { Migration } from '@mikro-orm/migrations';

/**
 * The user who made a subscription through the API: a route between two orgs routes only while that
 * user is a member of both (null: made by the platform, or before this column existed).
 */
export class Migration20261125000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "subscriptions" add column "created_by" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "subscriptions" drop column if exists "created_by";`);
  }
}
