import { Migration } from '@mikro-orm/migrations';

/**
 * Waiting sends by account and due time: each poll of the send-retry queue takes each account's earliest due sends
 * (its share of the batch), so one account's thousands of due sends no longer come before another's single one.
 */
export class Migration20261201160000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index if not exists "send_retries_owner_id_due_at_ms_index" on "send_retries" ("owner_id", "due_at_ms");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "send_retries_owner_id_due_at_ms_index";`);
  }
}
