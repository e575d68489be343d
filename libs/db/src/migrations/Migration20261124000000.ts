import { Migration } from '@mikro-orm/migrations';

/** Sources keep the props their component's `additionalProps()` returned for their values. */
export class Migration20261124000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "sources" add column "additional_props" jsonb null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "sources" drop column if exists "additional_props";`);
  }
}
