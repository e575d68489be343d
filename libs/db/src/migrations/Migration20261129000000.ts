import { Migration } from '@mikro-orm/migrations';

/**
 * Attempts by webhook and event: a delivery redelivered after a crash (or a lost acknowledgement) asks which attempts
 * its event already had (`DeliveryLog.attemptsSoFar`), which the (webhook, created_at) index answered by reading all
 * of the webhook's rows: 110 ms each at a million rows, for every event a crashed replica held.
 */
export class Migration20261129000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index if not exists "webhook_deliveries_webhook_id_event_id_index" on "webhook_deliveries" ("webhook_id", "event_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "webhook_deliveries_webhook_id_event_id_index";`);
  }
}
