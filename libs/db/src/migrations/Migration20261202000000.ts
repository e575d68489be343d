import { Migration } from '@mikro-orm/migrations';

/**
 * An event summary's event and meta as `json`, not `jsonb`: json keeps the text as indexed, so `event_summaries`
 * answers each event with its keys in the order the component emitted them (jsonb sorted them, shortest first), as the
 * webhook bodies and the event stream already do; and Postgres stores the text without building jsonb's binary form
 * for every indexed event. The table holds the last `EVENT_RETENTION` events per source and class, so the rewrite is
 * short; the lock timeout keeps the migration from queueing every reader and writer behind a long transaction.
 */
export class Migration20261202000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`set local lock_timeout = '10s';`);
    this.addSql(`alter table "event_summaries" alter column "event" type json using "event"::json, alter column "meta" type json using "meta"::json;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "event_summaries" alter column "event" type jsonb using "event"::jsonb, alter column "meta" type jsonb using "meta"::jsonb;`);
  }
}
