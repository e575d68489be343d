import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { EmitBatch, encodeJson } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { scrapeMetrics } from './support/metrics';
import { OwnPostgres, startOwnPostgres } from './support/own-postgres';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter } from './events.helpers';

/* eslint-disable @typescript-eslint/no-require-imports */
const { ensureDatabase } = require('../scripts/lib/infra') as { ensureDatabase(adminUrl: string, name: string): Promise<void> };
const { migrate } = require('../dist/libs/db/src/migrate.js') as { migrate(url: string): Promise<void> };
/* eslint-enable @typescript-eslint/no-require-imports */

const EVENTS = 30;
/** Events of one EMITS message holding several (an `EmitBatch`), published straight to EMITS after the others. */
const BATCHED = [100, 101, 102];

/**
 * INDEX_ASYNC_COMMIT (the default): an index batch commits without waiting for its WAL flush, so a Postgres crash
 * can lose the summaries of events already routed. Delivery indexes EMITS again once it sees Postgres started
 * again. The lost commits are stood in for by deleting the summaries in Postgres just before crashing it
 * (an immediate shutdown of a Postgres of the test's own): they come back, and an event the API deleted does not.
 */
describe('index: re-indexed from EMITS after a Postgres crash', () => {
  let pg: OwnPostgres;
  let system: System;

  beforeAll(async () => {
    pg = await startOwnPostgres();
    await ensureDatabase(pg.url('postgres'), 'recovery');
    await migrate(pg.url('recovery'));
    system = await startSystem({ DATABASE_URL: pg.url('recovery'), HTTP_RATE_PER_SEC: '0', DELIVERY_METRICS_PORT: String(await freePort()) });
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
    pg?.stop();
  });

  it('indexes again the events whose summaries the crash lost, not the ones deleted through the API', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const created = await api.post('/sources', { component_code: HTTP_SOURCE, name: 'recovered' });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    const url: string = created.body.data.configured_props.http.endpoint_url;
    for (let n = 0; n < EVENTS; n++) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      expect(res.status).toBe(200);
    }
    const emitter = await Emitter.connect(system);
    try {
      // A sequence the runner's ids do not reach: no id collides.
      const batch: EmitBatch = {
        invocations: [`inv_${randomBytes(8).toString('hex')}`],
        events: BATCHED.map((n, i) => ({ id: `${Date.now()}-${1000 + i}`, emitterId: id, ownerId: user.id, name: '', event: { n }, emitId: `emit_${randomBytes(8).toString('hex')}`, ts: Date.now(), emittedAtMs: Date.now() })),
      };
      await emitter.nc.jetstream().publish(emitter.names.emit(id), encodeJson(batch), { msgID: `${batch.invocations[0]}:p0` });
    } finally {
      await emitter.close();
    }
    const total = EVENTS + BATCHED.length;
    const listed = async (): Promise<{ id: string; event: { n: number } }[]> => (await api.get(`/sources/${id}/event_summaries?limit=100&expand=event`)).body.data ?? [];
    const events = await eventually(async () => ((await listed()).length === total ? listed() : undefined), { what: 'every event indexed', timeoutMs: 60_000 });

    // One event deleted through the API (from the summaries and from EMITS) before the crash.
    const gone = events.find((e) => e.event.n === 7)!;
    expect((await api.del(`/sources/${id}/events?start_id=${gone.id}&end_id=${gone.id}`)).status).toBe(202);
    await eventually(async () => !(await listed()).some((e) => e.id === gone.id), { what: 'the deleted event gone' });

    // The summaries lost with the last commits, then the crash.
    const db = new Client({ connectionString: pg.url('recovery') });
    await db.connect();
    const { rowCount } = await db.query('delete from event_summaries where emitter_id = $1', [id]);
    await db.end();
    expect(rowCount).toBe(total - 1);
    pg.crash();
    await new Promise((r) => setTimeout(r, 1000));
    pg.start();

    const back = await eventually(async () => {
      const now = await listed().catch(() => []);
      return now.length >= total - 1 ? now : undefined;
    }, { what: 'the lost summaries indexed again', timeoutMs: 60_000 });
    expect(back.map((e) => e.event.n).sort((a, b) => a - b)).toEqual([...[...Array(EVENTS).keys()].filter((n) => n !== 7), ...BATCHED]);
    expect(back.map((e) => e.id).sort()).toEqual(events.filter((e) => e.id !== gone.id).map((e) => e.id).sort());
    const metrics = await scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`);
    expect(metrics.delivery_events_reindexed_total).toBeGreaterThanOrEqual(total - 1);
  }, 180_000);
});
