import { Migration } from '@mikro-orm/migrations';

/**
 * Components by owner and creation time: COMPONENT_BYTES_PER_DAY_PER_ACCOUNT sums an account's saves of the last
 * 24 hours at every save, which the (owner, key, created_at) index would answer by reading all the account's rows.
 */
export class Migration20261128000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index if not exists "components_owner_id_created_at_ms_index" on "components" ("owner_id", "created_at_ms");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "components_owner_id_created_at_ms_index";`);
  }
}
