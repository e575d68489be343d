import { Migration } from '@mikro-orm/migrations';

/**
 * Every authenticated request reads the caller's orgs (no authorization cache):
 * org_members by user, which its primary key (org_id, user_id) cannot serve.
 */
export class Migration20261123190000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index if not exists "org_members_user_id_index" on "org_members" ("user_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "org_members_user_id_index";`);
  }
}
