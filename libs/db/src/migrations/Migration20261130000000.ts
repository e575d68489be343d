import { Migration } from '@mikro-orm/migrations';

/**
 * The user who made an auto-subscription: the subscriptions it gives new sources and workflows record them, so a
 * route between two orgs routes only while that user is a member of both (null: made before this column existed;
 * such routes between two orgs no longer route, see route-queries.ts).
 */
export class Migration20261130000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "auto_subscriptions" add column if not exists "created_by" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "auto_subscriptions" drop column if exists "created_by";`);
  }
}
