import { Migration } from '@mikro-orm/migrations';

/**
 * `webhook_retries` by emitter: `DELETE /sources/{id}/events` deletes the deliveries of the source's deleted events
 * that wait there, and without it each deletion read the whole table (a failure storm's millions of rows). The lock
 * timeout keeps the migration from queueing every writer behind a long transaction.
 */
export class Migration20261202190000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`set local lock_timeout = '10s';`);
    this.addSql(`create index if not exists "webhook_retries_emitter_id_index" on "webhook_retries" ("emitter_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "webhook_retries_emitter_id_index";`);
  }
}
