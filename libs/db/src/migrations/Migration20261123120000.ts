import { Migration } from '@mikro-orm/migrations';

/** Components keep the submitted entry file as `code` and the runnable bundle of a multi-file `component_url` beside it. */
export class Migration20261123120000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "components" add column "bundle" text null, add column "bundle_hash" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "components" drop column "bundle", drop column "bundle_hash";`);
  }
}
