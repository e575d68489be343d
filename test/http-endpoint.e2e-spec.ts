import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE, TIMER_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

/** The ingress alone (api without runner): what is stored in INVOCATIONS and what the client gets. */
const CUSTOM_RESPONSE_SOURCE = `module.exports = {
  name: "Custom Response", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond({ status: 201, body: "ok" }); },
};`;

describe('HTTP endpoints and manual runs (ingress)', () => {
  let system: System;
  let user: TestUser;
  let nc: NatsConnection;
  let names: Names;

  beforeAll(async () => {
    system = await startSystem({ HTTP_MAX_BODY_BYTES: '2048', HTTP_RATE_PER_SEC: '1', HTTP_BURST: '3', HTTP_RESPONSE_TIMEOUT_MS: '800' }, { apps: ['api'] });
    user = createUser(system);
    nc = await connect(natsAdmin());
    names = new Names(system.natsPrefix);
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  const lastInvocation = async (sourceId: string): Promise<InvocationMessage> => {
    const jsm = await nc.jetstreamManager();
    const m = await jsm.streams.getMessage(names.invocationsStream, { last_by_subj: names.invocation(partitionOf(sourceId, Number(system.env.PARTITIONS)), sourceId) });
    return decodeJson<InvocationMessage>(m.data);
  };

  const createSource = async (code: string): Promise<{ id: string; url: string }> => {
    const res = await client(system, user.apiKey).post('/sources', { component_code: code });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  };

  it('stores the request as an invocation and answers 200 {"success":true}', async () => {
    const s = await createSource(HTTP_SOURCE);
    const res = await fetch(`${s.url}/hooks/a?x=1&y=two`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-custom': 'v' }, body: '{"hello":"world"}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true });
    const inv = await lastInvocation(s.id);
    expect(inv).toMatchObject({ sourceId: s.id, kind: 'http', invocationId: expect.stringMatching(/^inv_/) });
    expect(inv.replyTo).toBeUndefined();
    expect(inv.event).toEqual({
      method: 'POST',
      path: '/hooks/a',
      query: { x: '1', y: 'two' },
      headers: expect.objectContaining({ 'content-type': 'application/json', 'x-custom': 'v' }),
      bodyRaw: '{"hello":"world"}',
      body: { hello: 'world' },
      url: `${s.url}/hooks/a?x=1&y=two`,
      client_ip: expect.any(String),
    });

    const form = await fetch(s.url, { method: 'PUT', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=%C3%A9' });
    expect(form.status).toBe(200);
    expect((await lastInvocation(s.id)).event).toMatchObject({ method: 'PUT', path: '/', body: { a: '1', b: 'é' }, bodyRaw: 'a=1&b=%C3%A9' });

    const text = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'just text' });
    expect(text.status).toBe(200);
    expect((await lastInvocation(s.id)).event).toMatchObject({ body: 'just text', bodyRaw: 'just text' });
  });

  it('a busy endpoint answers 404 within seconds of its source being deactivated, and again after it is reactivated and deleted', async () => {
    const s = await createSource(HTTP_SOURCE);
    const api = client(system, user.apiKey);
    // Requests keep arriving (answered 200, or 429 above this test system's rate): the endpoint's cache entry stays hot.
    const hit = async (): Promise<number> => (await fetch(s.url, { method: 'POST', body: '' })).status;
    expect(await hit()).toBe(200);
    const until = async (want: number, what: string): Promise<void> => {
      await eventually(async () => {
        const status = await hit();
        expect([200, 429, 404]).toContain(status);
        return status === want;
      }, { what, timeoutMs: 15_000, intervalMs: 50 });
    };
    const off = await api.put(`/sources/${s.id}`, { component_code: HTTP_SOURCE, active: false });
    expect(off.status).toBe(200);
    expect(off.body.data.configured_props.http.endpoint_url).toBe(s.url);
    await until(404, 'the deactivation seen by the endpoint');
    expect((await api.put(`/sources/${s.id}`, { component_code: HTTP_SOURCE, active: true })).status).toBe(200);
    await until(200, 'the reactivation seen by the endpoint');
    expect((await api.del(`/sources/${s.id}`)).status).toBe(204);
    await until(404, 'the deletion seen by the endpoint');
  });

  it('answers 404 for an unknown endpoint, 413 over the body limit, 429 with Retry-After over the rate', async () => {
    const unknown = await fetch(`${system.origin}/e/ennosuchendpoint`, { method: 'POST', body: 'x' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: expect.any(String), code: 'not_found' });

    const s = await createSource(HTTP_SOURCE);
    const big = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pad: 'x'.repeat(4096) }) });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: 'payload_too_large', details: { limit_bytes: expect.any(Number) } });

    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 6; i++) {
      const r = await fetch(s.url, { method: 'GET' });
      statuses.push(r.status);
      if (r.status === 429) {
        retryAfter = r.headers.get('retry-after');
        expect(((await r.json()) as { code: string }).code).toBe('rate_limited');
      }
    }
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  it('a customResponse endpoint waits on the reply subject and answers 504 when nobody responds', async () => {
    const s = await createSource(CUSTOM_RESPONSE_SOURCE);
    const res = await fetch(s.url, { method: 'POST', body: 'x' });
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ code: 'gateway_timeout', error: expect.stringContaining('respond()') });
    const inv = await lastInvocation(s.id);
    expect(inv.replyTo).toMatch(new RegExp(`resp\\.[a-z0-9]+\\.${inv.invocationId}$`));
  });

  it('a caller waiting for respond() is answered 404 as soon as the source is deleted, not at the timeout', async () => {
    // Its own api with a timeout no test waits for: only the deletion can end the request.
    const patient = await startSystem({ HTTP_RESPONSE_TIMEOUT_MS: '600000' }, { apps: ['api'] });
    try {
      const owner = createUser(patient);
      const created = await client(patient, owner.apiKey).post('/sources', { component_code: CUSTOM_RESPONSE_SOURCE });
      expect(created.status).toBe(200);
      const { id } = created.body.data;
      const waiting = fetch(created.body.data.configured_props.http.endpoint_url, { method: 'POST', body: 'x' });
      const jsm = await nc.jetstreamManager();
      const subject = new Names(patient.natsPrefix).invocation(partitionOf(id, Number(patient.env.PARTITIONS)), id);
      await eventually(async () => !!(await jsm.streams.getMessage(new Names(patient.natsPrefix).invocationsStream, { last_by_subj: subject }).catch(() => undefined)), { what: 'the request stored' });
      expect((await client(patient, owner.apiKey).del(`/sources/${id}`)).status).toBe(204);
      const res = await waiting;
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'the source was deleted before it called respond()', code: 'not_found', details: { invocation_id: expect.stringMatching(/^inv_/) } });
    } finally {
      await patient.stop();
    }
  });

  it('POST /v1/sources/{id}/run stores a manual invocation (a timer source: its timer event) and answers 202; another account gets 404', async () => {
    const s = await createSource(HTTP_SOURCE);
    const api = client(system, user.apiKey);
    const res = await api.post(`/sources/${s.id}/run`);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ data: { invocation_id: expect.stringMatching(/^inv_/) } });
    const inv = await lastInvocation(s.id);
    expect(inv).toMatchObject({ invocationId: res.body.data.invocation_id, kind: 'manual', event: { manual: true, timestamp: expect.any(Number) } });

    const withEvent = await api.post(`/sources/${s.id}/run`, { event: { hello: 1 } });
    expect(withEvent.status).toBe(202);
    expect((await lastInvocation(s.id)).event).toEqual({ hello: 1 });

    // An event over the HTTP body limit (2048 here) is refused like an oversize request.
    const big = await api.post(`/sources/${s.id}/run`, { event: { pad: 'x'.repeat(4096) } });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: 'payload_too_large', error: expect.stringContaining('2048 bytes') });

    // A timer source run now gets the event its timer passes.
    const timer = await api.post('/sources', { component_code: TIMER_SOURCE, configured_props: { timer: { intervalSeconds: 120 } } });
    expect((await api.post(`/sources/${timer.body.data.id}/run`)).status).toBe(202);
    expect((await lastInvocation(timer.body.data.id)).event).toEqual({ timestamp: expect.any(Number), interval_seconds: 120 });
    const cron = await api.post('/sources', { component_code: TIMER_SOURCE, configured_props: { timer: { cron: '0 11 * * *', timezone: 'Europe/Paris' } } });
    expect((await api.post(`/sources/${cron.body.data.id}/run`)).status).toBe(202);
    expect((await lastInvocation(cron.body.data.id)).event).toEqual({ timestamp: expect.any(Number), cron: '0 11 * * *', timezone: 'Europe/Paris' });

    const other = createUser(system);
    expect((await client(system, other.apiKey).post(`/sources/${s.id}/run`)).status).toBe(404);
    expect((await api.post('/sources/dc_doesnotexist/run')).status).toBe(404);
    expect((await client(system).post(`/sources/${s.id}/run`)).status).toBe(401);
  });
});
