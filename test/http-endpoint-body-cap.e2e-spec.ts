import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

/** DESIGN.md: 413 for too large, never a fault; also when HTTP_MAX_BODY_BYTES is above what one NATS message carries. */
describe('HTTP_MAX_BODY_BYTES above the NATS server max_payload', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ HTTP_MAX_BODY_BYTES: String(8 * 1024 * 1024) }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('answers 413 {code: payload_too_large} for a body that fits the setting but not a NATS message, and 200 for one that fits', async () => {
    const user = createUser(system);
    const created = await client(system, user.apiKey).post('/sources', { component_code: HTTP_SOURCE });
    expect(created.status).toBe(200);
    const url: string = created.body.data.configured_props.http.endpoint_url;

    const big = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(3 * 1024 * 1024) });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: 'payload_too_large', error: expect.stringContaining('max_payload'), details: { bytes: expect.any(Number), limit_bytes: expect.any(Number) } });

    const fits = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(300 * 1024) });
    expect(fits.status).toBe(200);
  });
});
