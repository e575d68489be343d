import { Migration } from '@mikro-orm/migrations';

/** The initial schema: accounts, components, sources, subscriptions, webhooks, event summaries, usage. */
export class Migration20261122000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "api_keys" ("id" varchar(255) not null, "user_id" varchar(255) not null, "key_hash" varchar(255) not null, "created_at" bigint not null, "revoked_at" bigint null, constraint "api_keys_pkey" primary key ("id"));`);
    this.addSql(`create index "api_keys_user_id_index" on "api_keys" ("user_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(`create table "auto_subscriptions" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "listener_id" varchar(255) not null, "event_name" varchar(255) not null, "created_at" bigint not null, constraint "auto_subscriptions_pkey" primary key ("id"));`);
    this.addSql(`alter table "auto_subscriptions" add constraint "auto_subscriptions_owner_id_listener_id_event_name_unique" unique ("owner_id", "listener_id", "event_name");`);
    this.addSql(`create table "components" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "user_id" varchar(255) null, "key" varchar(255) null, "name" varchar(255) not null, "version" varchar(255) not null, "type" varchar(255) not null default 'source', "description" text null, "code" text not null, "code_hash" varchar(255) not null, "component_url" text null, "configurable_props" jsonb not null, "meta" jsonb not null, "created_at_ms" bigint not null, "created_at" bigint not null, "updated_at" bigint not null, constraint "components_pkey" primary key ("id"));`);
    this.addSql(`create index "components_owner_id_key_created_at_ms_index" on "components" ("owner_id", "key", "created_at_ms");`);
    this.addSql(`create table "event_summaries" ("emitter_id" varchar(255) not null, "id" varchar(255) not null, "id_ms" bigint not null, "id_seq" int not null, "name" varchar(255) not null default '', "channel_class" varchar(255) not null default 'emits', "owner_id" varchar(255) not null, "emit_id" varchar(255) not null, "summary" text null, "event" jsonb not null, "meta" jsonb null, "size_bytes" int not null default 0, "indexed_at_ms" bigint not null, constraint "event_summaries_pkey" primary key ("emitter_id", "id"));`);
    this.addSql(`create index "event_summaries_emitter_id_channel_class_id_ms_id_seq_index" on "event_summaries" ("emitter_id", "channel_class", "id_ms", "id_seq");`);
    this.addSql(`create table "orgs" ("id" varchar(255) not null, "name" varchar(255) not null, "orgname" varchar(255) not null, "email" varchar(255) not null, "created_at" bigint not null, constraint "orgs_pkey" primary key ("id"));`);
    this.addSql(`alter table "orgs" add constraint "orgs_orgname_unique" unique ("orgname");`);
    this.addSql(`create table "org_members" ("org_id" varchar(255) not null, "user_id" varchar(255) not null, "created_at" bigint not null, constraint "org_members_pkey" primary key ("org_id", "user_id"));`);
    this.addSql(`create table "sources" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "user_id" varchar(255) not null, "component_id" varchar(255) not null, "name" varchar(255) not null, "name_slug" varchar(255) not null, "configured_props" jsonb not null, "active" boolean not null default true, "rev" int not null default 1, "published_rev" int not null default 0, "endpoint_key" varchar(255) null, "run_timeout_ms" int null, "created_at_ms" bigint not null, "created_at" bigint not null, "updated_at" bigint not null, "deleted_at" bigint null, constraint "sources_pkey" primary key ("id"));`);
    this.addSql(`alter table "sources" add constraint "sources_endpoint_key_unique" unique ("endpoint_key");`);
    this.addSql(`create index "sources_owner_id_created_at_ms_id_index" on "sources" ("owner_id", "created_at_ms", "id");`);
    this.addSql(`create table "subscriptions" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "emitter_id" varchar(255) not null, "listener_id" varchar(255) not null, "event_name" varchar(255) not null default '', "created_at" bigint not null, constraint "subscriptions_pkey" primary key ("id"));`);
    this.addSql(`create index "subscriptions_emitter_id_index" on "subscriptions" ("emitter_id");`);
    this.addSql(`create index "subscriptions_listener_id_index" on "subscriptions" ("listener_id");`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_owner_id_emitter_id_listener_id_event_name_unique" unique ("owner_id", "emitter_id", "listener_id", "event_name");`);
    this.addSql(`create table "usage_daily" ("owner_id" varchar(255) not null, "day" varchar(255) not null, "invocations" bigint not null default 0, "compute_ms" bigint not null default 0, constraint "usage_daily_pkey" primary key ("owner_id", "day"));`);
    this.addSql(`create table "users" ("id" varchar(255) not null, "username" varchar(255) not null, "email" varchar(255) not null, "plan" varchar(255) not null default 'free', "created_at" bigint not null, "updated_at" bigint not null, constraint "users_pkey" primary key ("id"));`);
    this.addSql(`alter table "users" add constraint "users_username_unique" unique ("username");`);
    this.addSql(`create table "webhooks" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "user_id" varchar(255) not null, "name" text null, "description" text null, "url" text not null, "active" boolean not null default true, "secret" jsonb not null, "disabled_reason" text null, "created_at_ms" bigint not null, "created_at" bigint not null, "updated_at" bigint not null, constraint "webhooks_pkey" primary key ("id"));`);
    this.addSql(`create index "webhooks_owner_id_created_at_ms_id_index" on "webhooks" ("owner_id", "created_at_ms", "id");`);
    this.addSql(`create table "webhook_deliveries" ("id" varchar(255) not null, "webhook_id" varchar(255) not null, "event_id" varchar(255) not null, "emitter_id" varchar(255) not null, "attempt" int not null default 1, "status" varchar(255) not null, "response_code" int null, "latency_ms" int null, "response_body" text null, "error" text null, "next_attempt_at_ms" bigint null, "created_at_ms" bigint not null, constraint "webhook_deliveries_pkey" primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_webhook_id_created_at_ms_index" on "webhook_deliveries" ("webhook_id", "created_at_ms");`);
    this.addSql(`create unique index "sources_owner_slug_live_unique" on "sources" ("owner_id", "name_slug") where "deleted_at" is null;`);
    this.addSql(`create index "event_summaries_owner_index" on "event_summaries" ("owner_id");`);
  }
}
