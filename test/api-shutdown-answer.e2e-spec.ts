import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig } from '@app/config';
import { createApiApp } from '../apps/api/src/bootstrap';
import { ShutdownState } from '../apps/api/src/common/shutdown-answer';
import { createUser } from './support/accounts';
import { natsAdminEnv } from './support/env';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/**
 * While the api shuts down (SIGTERM, a rolling restart) a request is answered 503 in the service's error shape with
 * Retry-After, and its connection closed: Fastify's own answer then was `{"error":"Service Unavailable","message":…,
 * "statusCode":503}` without a code or Retry-After. The api runs in this process, so its shutdown can be watched.
 */
describe('the api shutting down', () => {
  let system: System;
  let app: NestFastifyApplication;
  let origin: string;

  beforeAll(async () => {
    system = await startSystem({}, { apps: [] });
    const env: Record<string, string> = { ...system.appEnv('api'), ...natsAdminEnv(), REGISTRY_DIR: 'off', LOG_LEVEL: 'error' };
    delete env.NATS_INBOX_PREFIX;
    app = await createApiApp(loadConfig(env));
    await app.listen(Number(system.env.PORT), '127.0.0.1');
    origin = `http://127.0.0.1:${system.env.PORT}`;
  });
  afterAll(async () => {
    await app?.close();
    await system?.stop();
  });

  it('answers every request 503 unavailable with Retry-After and closes its connection', async () => {
    const user = createUser(system);
    const me = `GET /v1/users/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`;
    expect((await rawRequest(origin, me)).status).toBe(200);
    // As from the moment Nest starts destroying the api's modules (the root module's providers first), through
    // Fastify's close, until the connections to NATS and Postgres are closed.
    app.get(ShutdownState).active = true;
    for (const request of [me, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 'POST /e/nosuchendpoint HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}']) {
      const r = await rawRequest(origin, request.replace('\r\n', '\r\nConnection: keep-alive\r\n'));
      expect({ status: r.status, body: JSON.parse(r.body) }).toEqual({
        status: 503,
        body: { error: 'the api is shutting down: retry in a moment (another replica may answer at once)', code: 'unavailable', details: { retry_after_seconds: 1 } },
      });
      expect(r.headers).toMatch(/\r\nretry-after: 1\r\n/i);
      // Asked to keep it alive, the server closes it (rawRequest reads until then).
      expect(r.headers).toMatch(/\r\nconnection: close\r\n/i);
    }
  });

  it('is set when the api closes', async () => {
    const state = app.get(ShutdownState);
    state.active = false;
    await app.close();
    app = undefined as unknown as NestFastifyApplication;
    expect(state.active).toBe(true);
  });
});
