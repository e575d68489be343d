import { Migration } from '@mikro-orm/migrations';

/**
 * The account of each waiting webhook retry (its webhook's owner), with an index by account and due time: each poll
 * of the retry queue takes each account's earliest due retries (its share of the batch), so one account's thousands
 * of due retries no longer come before another's single one. Safe on a large table: the column comes with a constant
 * default (no rewrite of the table), and the delivery app gives rows written before their owner as they come due, a
 * batch per poll (`apps/delivery/src/webhooks-out/retry-queue.ts`), not in one update holding every row; the lock
 * timeout keeps the migration from queueing every reader and writer of the table behind a long transaction.
 */
export class Migration20261201170000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`set local lock_timeout = '10s';`);
    this.addSql(`alter table "webhook_retries" add column if not exists "owner_id" varchar(255) not null default '';`);
    this.addSql(`create index if not exists "webhook_retries_owner_id_due_at_ms_index" on "webhook_retries" ("owner_id", "due_at_ms");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "webhook_retries_owner_id_due_at_ms_index";`);
    this.addSql(`alter table "webhook_retries" drop column if exists "owner_id";`);
  }
}
