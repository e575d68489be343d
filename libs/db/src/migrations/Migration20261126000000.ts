import { Migration } from '@mikro-orm/migrations';

/**
 * When a subscription was made, in milliseconds: the subscription lists are oldest first, and
 * `created_at` (seconds) cannot order the subscriptions made within one second. Rows made before
 * this column existed take their second; a row inserted without it takes the insert's time.
 */
export class Migration20261126000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "subscriptions" add column "created_at_ms" bigint null;`);
    this.addSql(`update "subscriptions" set "created_at_ms" = "created_at" * 1000;`);
    this.addSql(`alter table "subscriptions" alter column "created_at_ms" set default (extract(epoch from clock_timestamp()) * 1000)::bigint;`);
    this.addSql(`alter table "subscriptions" alter column "created_at_ms" set not null;`);
    this.addSql(`create index "subscriptions_owner_id_created_at_ms_id_index" on "subscriptions" ("owner_id", "created_at_ms", "id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "subscriptions_owner_id_created_at_ms_id_index";`);
    this.addSql(`alter table "subscriptions" drop column if exists "created_at_ms";`);
  }
}
