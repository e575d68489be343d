import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, HttpEvent, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

/**
 * `client_ip` of an HTTP source's event: the address of the connection the request came on, unless TRUST_PROXY names
 * that address as a proxy, whose X-Forwarded-For then says who the client is. Anyone can send X-Forwarded-For.
 */
describe('HTTP endpoints: client_ip and TRUST_PROXY', () => {
  let direct: System;
  let proxied: System;
  let nc: NatsConnection;

  beforeAll(async () => {
    [direct, proxied] = await Promise.all([startSystem({}, { apps: ['api'] }), startSystem({ TRUST_PROXY: '127.0.0.1' }, { apps: ['api'] })]);
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await Promise.all([direct?.stop(), proxied?.stop()]);
  });

  /** The client_ip of the events of requests to a new source of `system` (sent from 127.0.0.1), one per X-Forwarded-For given (undefined: none). */
  const clientIps = async (system: System, forwardedFor: (string | undefined)[]): Promise<string[]> => {
    const res = await client(system, createUser(system).apiKey).post('/sources', { component_code: HTTP_SOURCE });
    expect(res.status).toBe(200);
    const { id } = res.body.data as { id: string };
    const url: string = res.body.data.configured_props.http.endpoint_url;
    const names = new Names(system.natsPrefix);
    const jsm = await nc.jetstreamManager();
    const ips: string[] = [];
    for (const xff of forwardedFor) {
      // The first request to an endpoint is served by the framework's route (it loads the endpoint into the lookup's
      // cache); the next ones by the ingress fast path: each case is sent twice, so both ways are asserted.
      const sent = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(xff === undefined ? {} : { 'x-forwarded-for': xff }) }, body: '{}' });
      expect(sent.status).toBe(200);
      const m = await jsm.streams.getMessage(names.invocationsStream, { last_by_subj: names.invocation(partitionOf(id, Number(system.env.PARTITIONS)), id) });
      const stored = decodeJson<InvocationMessage | InvocationMessage[]>(m.data);
      ips.push(((Array.isArray(stored) ? stored[stored.length - 1] : stored).event as HttpEvent).client_ip);
    }
    return ips;
  };

  it('is the connection address by default, whatever X-Forwarded-For says', async () => {
    expect(await clientIps(direct, ['203.0.113.9', '203.0.113.9', undefined, 'not an address'])).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('is the address the trusted proxy forwarded with TRUST_PROXY=127.0.0.1, not one an earlier hop wrote', async () => {
    expect(await clientIps(proxied, ['203.0.113.9', '203.0.113.9', undefined, '198.51.100.7, 203.0.113.9', '198.51.100.7, 203.0.113.9'])).toEqual([
      '203.0.113.9',
      '203.0.113.9',
      '127.0.0.1',
      '203.0.113.9',
      '203.0.113.9',
    ]);
  });
});
