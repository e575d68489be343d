import { Migration } from '@mikro-orm/migrations';

/**
 * Waiting webhook retries: a failed attempt's next attempt is kept here, not
 * as a delayed nak on the DELIVERIES consumer, so the consumer's pending count
 * stays bounded however many events a dead endpoint accumulates. One row per
 * (webhook, emitter, event): the next attempt of that event's delivery.
 */
export class Migration20261123140000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "webhook_retries" ("id" varchar(255) not null, "webhook_id" varchar(255) not null, "emitter_id" varchar(255) not null, "event_id" varchar(255) not null, "attempt" int not null, "due_at_ms" bigint not null, "message" jsonb not null, "created_at_ms" bigint not null, constraint "webhook_retries_pkey" primary key ("id"));`);
    this.addSql(`create unique index "webhook_retries_event_unique" on "webhook_retries" ("webhook_id", "emitter_id", "event_id");`);
    this.addSql(`create index "webhook_retries_due_at_ms_index" on "webhook_retries" ("due_at_ms");`);
    this.addSql(`create index "webhook_retries_webhook_id_due_at_ms_index" on "webhook_retries" ("webhook_id", "due_at_ms");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "webhook_retries";`);
  }
}
