import { connect, NatsConnection } from 'nats';
import { decodeJson, Names, partitionOf } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { eventually, startSystem, System } from './support/system';

const SOURCE = `module.exports = { name: "Relay", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() { this.http.respond({ status: 200, body: "ok" }); } };`;

/**
 * The api relays the answer a runner publishes for a custom response. The runner and the sandbox check it (a status,
 * valid header names and values, at most 100 header lines and 8 KiB of them); the api checks it again before writing
 * it, so an answer that reaches it unchecked (a compromised runner, a bug on the message path) is a 502 in the error
 * shape, never a 500, an answer a client cannot read, or a 504 after the request was answered. No runner runs here:
 * the test plays the runner, reading the stored invocation and publishing the answer to its reply subject.
 */
describe('the api checks a relayed respond() answer before writing it', () => {
  let system: System;
  let nc: NatsConnection;
  let endpoint: string;
  let subject: string;
  let names: Names;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api'] });
    nc = await connect(natsAdmin());
    names = new Names(system.natsPrefix);
    const user = createUser(system);
    const created = await client(system, user.apiKey).post('/sources', { component_code: SOURCE });
    expect(created.status).toBe(200);
    endpoint = created.body.data.configured_props.http.endpoint_url as string;
    subject = names.invocation(partitionOf(created.body.data.id as string, Number(system.env.PARTITIONS)), created.body.data.id as string);
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  /** The reply subject of the newest invocation stored after `afterSeq`, and its sequence. */
  const newestReplyTo = async (afterSeq: number): Promise<{ replyTo: string; seq: number } | undefined> => {
    try {
      const m = await (await nc.jetstreamManager()).streams.getMessage(names.invocationsStream, { last_by_subj: subject });
      if (m.seq <= afterSeq) return undefined;
      const stored = decodeJson<{ replyTo?: string } | { replyTo?: string }[]>(m.data);
      const inv = Array.isArray(stored) ? stored[stored.length - 1] : stored;
      return inv.replyTo ? { replyTo: inv.replyTo, seq: m.seq } : undefined;
    } catch {
      return undefined;
    }
  };

  let lastSeq = 0;
  /** A request to the endpoint answered with `payload` (raw bytes of the runner's message). */
  const answeredWith = async (payload: string): Promise<Response> => {
    const pending = fetch(endpoint, { method: 'POST' });
    const { replyTo, seq } = await eventually(() => newestReplyTo(lastSeq), { what: 'the invocation stored' });
    lastSeq = seq;
    nc.publish(replyTo, new TextEncoder().encode(payload));
    return pending;
  };

  it('relays a valid answer as it is', async () => {
    const res = await answeredWith(JSON.stringify({ status: 201, headers: { 'x-own': 'kept', 'set-cookie': ['a=1', 'b=2'] }, body: 'made' }));
    expect([res.status, res.headers.get('x-own'), await res.text()]).toEqual([201, 'kept', 'made']);
  });

  const cases: [string, unknown][] = [
    ['20,000 headers', { status: 200, headers: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`x-h${i}`, 'v'])), body: 'x' }],
    ['101 Set-Cookie values', { status: 200, headers: { 'set-cookie': Array.from({ length: 101 }, (_, i) => `c${i}=1`) } }],
    ['one header of 900 KB', { status: 200, headers: { 'x-big': 'a'.repeat(900 * 1024) }, body: 'x' }],
    ['a header name with a space', { status: 200, headers: { 'bad name': 'x' }, body: 'x' }],
    ['a header value with a line break', { status: 200, headers: { 'x-split': 'a\r\nx-injected: 1' }, body: 'x' }],
    ['a header value that is a number', { status: 200, headers: { 'x-n': 5 }, body: 'x' }],
    ['headers that are a string', { status: 200, headers: 'x-a: 1', body: 'x' }],
    ['a status written as text', { status: '200', body: 'x' }],
    ['a fractional status', { status: 200.5, body: 'x' }],
    ['a status over 599', { status: 700, body: 'x' }],
    ['a body that is an object', { status: 200, body: { a: 1 } }],
    ['an unknown body encoding', { status: 200, body: 'x', bodyEncoding: 'utf-7' }],
    ['null', null],
    ['an array', [200]],
  ];
  it.each(cases)('answers 502 source_error to %s, in the error shape', async (_what, message) => {
    const res = await answeredWith(JSON.stringify(message));
    const body = (await res.json()) as Record<string, unknown>;
    expect([res.status, body.code]).toEqual([502, 'source_error']);
    expect(body.error).toMatch(/^the source answered with a response that cannot be relayed/);
    expect(Object.keys(body).every((k) => ['error', 'code', 'details'].includes(k))).toBe(true);
    expect(res.headers.get('x-injected')).toBeNull();
  });
});
