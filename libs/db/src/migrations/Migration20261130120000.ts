import { Migration } from '@mikro-orm/migrations';

/**
 * Workflow sends waiting for their next attempt (`$.send.http|email|s3`), or held back while their account has its
 * share of the sender's slots: in Postgres rather than naked in SENDS, where each one held a place among the
 * consumer's max_ack_pending and one account's could fill it for every other account (apps/delivery/src/sends).
 */
export class Migration20261130120000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists "send_retries" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "attempt" int not null, "due_at_ms" bigint not null, "message" json not null, "created_at_ms" bigint not null, constraint "send_retries_pkey" primary key ("id"));`);
    this.addSql(`create index if not exists "send_retries_due_at_ms_index" on "send_retries" ("due_at_ms");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "send_retries";`);
  }
}
