import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for the queries that read a whole table (measured on a scratch database with a million rows each):
 * - the reconciler's lagging rows, every 5 s (`published_rev < rev or deleted_at is not null order by updated_at`):
 *   250–300 ms on sources, 90 ms on 200,000 workflows, now partial indexes holding only the lagging rows;
 * - a workflow's code step found by its code hash on every create or update (0.6–0.8 s per step), and the code
 *   cleanup's lookup by code or bundle hash;
 * - usage_seen's prune by age, every 5 s (its `or` kept the `stream_seq` index out: 96–137 ms);
 * - auto_subscriptions by listener, on every delete of a source, workflow or webhook.
 * And event_summaries' owner index goes: no query reads it, every indexed event wrote it.
 */
export class Migration20261129010000 extends Migration {
  override async up(): Promise<void> {
    for (const table of ['sources', 'workflows']) {
      this.addSql(`create index if not exists "${table}_unpublished_index" on "${table}" ("updated_at") where published_rev < rev or deleted_at is not null;`);
    }
    this.addSql(`create index if not exists "components_code_hash_index" on "components" ("code_hash");`);
    this.addSql(`create index if not exists "components_bundle_hash_index" on "components" ("bundle_hash") where bundle_hash is not null;`);
    this.addSql(`create index if not exists "usage_seen_created_at_ms_index" on "usage_seen" ("created_at_ms");`);
    this.addSql(`create index if not exists "auto_subscriptions_listener_id_index" on "auto_subscriptions" ("listener_id");`);
    this.addSql(`drop index if exists "event_summaries_owner_index";`);
  }

  override async down(): Promise<void> {
    this.addSql(`create index if not exists "event_summaries_owner_index" on "event_summaries" ("owner_id");`);
    for (const name of ['sources_unpublished_index', 'workflows_unpublished_index', 'components_code_hash_index', 'components_bundle_hash_index', 'usage_seen_created_at_ms_index', 'auto_subscriptions_listener_id_index']) {
      this.addSql(`drop index if exists "${name}";`);
    }
  }
}
