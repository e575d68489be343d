import { Migration } from '@mikro-orm/migrations';

/**
 * `usage_seen`: the USAGE records already counted into `usage_daily`, so a
 * redelivered record (committed, then the ack was lost) is not counted twice.
 * Rows are dropped once their stream sequence has left the USAGE work queue.
 */
export class Migration20261123000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "usage_seen" ("invocation_id" varchar(255) not null, "stream_seq" bigint not null, "created_at_ms" bigint not null, constraint "usage_seen_pkey" primary key ("invocation_id"));`);
    this.addSql(`create index "usage_seen_stream_seq_index" on "usage_seen" ("stream_seq");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "usage_seen";`);
  }
}
