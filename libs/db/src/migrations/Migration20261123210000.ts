import { Migration } from '@mikro-orm/migrations';

/** Workflows (`p_…`): trigger, resolved steps, settings, encrypted secrets; an HTTP trigger's endpoint key is unique across workflows. */
export class Migration20261123210000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "workflows" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "user_id" varchar(255) not null, "name" varchar(255) not null, "deployment_id" varchar(255) not null, "trigger" jsonb not null, "steps" jsonb not null, "settings" jsonb not null, "secrets" jsonb not null, "trigger_subscription_id" varchar(255) null, "active" boolean not null default true, "rev" int not null default 1, "published_rev" int not null default 0, "endpoint_key" varchar(255) null, "created_at_ms" bigint not null, "created_at" bigint not null, "updated_at" bigint not null, "deleted_at" bigint null, constraint "workflows_pkey" primary key ("id"));`);
    this.addSql(`create index "workflows_owner_id_created_at_ms_id_index" on "workflows" ("owner_id", "created_at_ms", "id");`);
    this.addSql(`alter table "workflows" add constraint "workflows_endpoint_key_unique" unique ("endpoint_key");`);
    this.addSql(`create unique index "workflows_owner_id_name_live_unique" on "workflows" ("owner_id", "name") where "deleted_at" is null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "workflows";`);
  }
}
