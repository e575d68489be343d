import { connect } from 'nats';
import { Names } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { natsAdmin } from './support/env';
import { startSystem, System } from './support/system';

/** When JetStream cannot confirm that a request was stored, the sender is told to retry (503 with Retry-After), not a bare 500. */
describe('HTTP ingress while JetStream cannot store', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('answers 503 unavailable with Retry-After and the invocation id', async () => {
    const user = createUser(system);
    const created = await client(system, user.apiKey).post('/sources', { component_code: HTTP_SOURCE });
    expect(created.status).toBe(200);
    const url: string = created.body.data.configured_props.http.endpoint_url;
    expect((await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(200);

    // The stream is gone (as while no NATS node can take the write): nothing stores the request.
    const nc = await connect(natsAdmin());
    try {
      await (await nc.jetstreamManager()).streams.delete(new Names(system.natsPrefix).invocationsStream);
    } finally {
      await nc.close();
    }
    const res = await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toEqual({
      error: expect.stringContaining('could not be confirmed as stored'),
      code: 'unavailable',
      details: { invocation_id: expect.stringMatching(/\S/), retry_after_seconds: 1 },
    });
  });
});
