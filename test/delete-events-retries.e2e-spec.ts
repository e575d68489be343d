import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { httpSourceToWebhook, Receiver, sql } from './events.helpers';

/**
 * Deleted events are not sent later. A failing webhook's events wait in the retry queue (`webhook_retries`, here an
 * hour each); once the webhook answers 2xx again its waiting events are sent at once (catch-up). Before, events deleted
 * with `DELETE /sources/{id}/events` while they waited were still sent then: only their summaries and `EMITS` copies
 * went.
 */
describe('DELETE /sources/{id}/events and the deliveries waiting for a failing webhook', () => {
  let system: System;
  let receiver: Receiver;
  let failing = true;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', WEBHOOK_RETRY_SCHEDULE: '1h,1h', DELIVERY_METRICS_PORT: String(await freePort()) });
    receiver = await new Receiver().start();
    receiver.respond = () => ({ status: failing ? 500 : 200 });
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  /** A source and webhook whose first four events failed and wait in the retry queue: their ids, oldest first. */
  async function fourWaiting(api: ReturnType<typeof client>): Promise<{ src: string; url: string; ids: string[] }> {
    failing = true;
    const { src, url, wh } = await httpSourceToWebhook(system, api, receiver.url);
    for (let i = 0; i < 4; i++) expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) })).status).toBe(200);
    await eventually(async () => (await sql(system, 'select 1 from webhook_retries where webhook_id = $1', [wh])).length === 4, { what: 'four deliveries waiting to be retried', timeoutMs: 30_000 });
    const ids = receiver.received.filter((r) => r.headers['x-pd-emitter-id'] === src).map((r) => String(r.headers['x-pd-event-id']));
    return { src, url, ids: [...new Set(ids)].sort() };
  }

  /** The webhook answers again: one more event succeeds, and the waiting ones are sent with it. */
  async function recover(url: string): Promise<void> {
    failing = false;
    expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"i":"after"}' })).status).toBe(200);
  }

  const sentAfterRecovery = (src: string, since: number): string[] =>
    receiver.received.filter((r) => r.headers['x-pd-emitter-id'] === src && r.at >= since && r.body !== '{"i":"after"}').map((r) => String(r.headers['x-pd-event-id']));

  it('a range deleted while its events wait is not sent once the webhook answers again; the rest is', async () => {
    const api = client(system, createUser(system).apiKey);
    const { src, url, ids } = await fourWaiting(api);
    expect(ids).toHaveLength(4);
    expect((await api.del(`/sources/${src}/events?start_id=${ids[0]}&end_id=${ids[1]}`)).status).toBe(202);
    await eventually(async () => (await api.get(`/sources/${src}/event_summaries`)).body.data.length === 2, { what: 'the range deleted' });
    await eventually(async () => (await sql(system, 'select 1 from webhook_retries where emitter_id = $1', [src])).length === 2, { what: "the range's deliveries dropped" });

    const since = Date.now();
    await recover(url);
    await eventually(async () => sentAfterRecovery(src, since).length >= 2, { what: 'the events not deleted sent', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(new Set(sentAfterRecovery(src, since))).toEqual(new Set(ids.slice(2)));
  });

  it('every event of a source deleted while they wait: none is sent once the webhook answers again', async () => {
    const api = client(system, createUser(system).apiKey);
    const { src, url, ids } = await fourWaiting(api);
    expect(ids).toHaveLength(4);
    expect((await api.del(`/sources/${src}/events`)).status).toBe(202);
    await eventually(async () => (await sql(system, 'select 1 from webhook_retries where emitter_id = $1', [src])).length === 0, { what: "the source's deliveries dropped" });

    const since = Date.now();
    await recover(url);
    await eventually(async () => receiver.received.some((r) => r.body === '{"i":"after"}' && r.at >= since && r.headers['x-pd-emitter-id'] === src), { what: 'the next event sent', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(sentAfterRecovery(src, since)).toEqual([]);
  });
});
