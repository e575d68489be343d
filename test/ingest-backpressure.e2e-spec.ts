import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

const post = (url: string, n: number) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });

/**
 * Back-pressure of HTTP ingress: with no runner to drain INVOCATIONS, the
 * backlog only grows, so the bounds are reached for certain; once a runner
 * starts, everything accepted runs and the endpoints accept again.
 */
describe('HTTP ingress back-pressure (INGEST_MAX_PENDING_PER_SOURCE, INGEST_MAX_PENDING)', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem(
      { HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_PER_SOURCE: '5', INGEST_MAX_PENDING: '8', INGEST_BACKLOG_POLL_MS: '50' },
      { apps: ['api', 'delivery'] },
    );
  });
  afterAll(async () => {
    await system?.stop();
  });

  const health = async () => (await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: Record<string, number> };

  it('answers 429 backlog_full with Retry-After once a source, then the service, has too many invocations waiting; accepted requests all run once a runner drains them', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const urls: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await api.post('/sources', { component_code: HTTP_SOURCE, name: `bp${i}` });
      expect(created.status).toBe(200);
      urls.push(created.body.data.configured_props.http.endpoint_url);
      ids.push(created.body.data.id);
    }
    const accepted = [0, 0, 0];

    // Source 0 takes 5, then its own bound answers.
    for (let n = 0; n < 5; n++) {
      expect((await post(urls[0], n)).status).toBe(200);
      accepted[0]++;
    }
    await eventually(async () => (await health()).ingest.invocations_pending >= 5, { what: 'the backlog read to reach 5' });
    const refused = await post(urls[0], 99);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toEqual({
      error: expect.stringContaining('this source has 5 invocations waiting to run (limit 5)'),
      code: 'backlog_full',
      details: { scope: 'source', pending: 5, limit: 5, retry_after_seconds: Number(refused.headers.get('retry-after')) },
    });

    // Another source is not held back by source 0's backlog, until the whole service holds 8.
    for (let n = 0; n < 3; n++) {
      expect((await post(urls[1], n)).status).toBe(200);
      accepted[1]++;
    }
    await eventually(async () => (await health()).ingest.invocations_pending >= 8, { what: 'the backlog read to reach 8' });
    const systemFull = await post(urls[2], 0);
    expect(systemFull.status).toBe(429);
    expect(await systemFull.json()).toMatchObject({ code: 'backlog_full', details: { scope: 'system', pending: 8, limit: 8 } });
    const h = await health();
    expect(h.ingest).toEqual({ invocations_pending: 8, events_unrouted: 0, max_pending: 8, max_pending_per_source: 5, refused_total: 2 });

    // A runner drains the backlog: every accepted request becomes an event, and the endpoints accept again.
    await system.startApp('runner', 'runner');
    for (const [i, id] of ids.slice(0, 2).entries()) {
      await eventually(async () => {
        const res = await api.get(`/sources/${id}/event_summaries?limit=100`);
        return res.body.data.length === accepted[i] ? res : undefined;
      }, { what: `source ${i}'s accepted events`, timeoutMs: 60_000 });
    }
    await eventually(async () => (await post(urls[2], 1)).status === 200, { what: 'the endpoint to accept again', timeoutMs: 30_000 });
    expect((await health()).ingest.invocations_pending).toBeLessThan(8);
  });
});
