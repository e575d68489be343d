import fc from 'fast-check';
import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { DocOperation, fillPath, Json, operationsOf } from './support/openapi-requests';
import { startSystem, System } from './support/system';

/**
 * Property: for every route of the document, a malformed request (random path values, unknown or
 * mistyped query parameters, bodies of the wrong JSON type, invalid JSON, odd content types) never
 * answers 5xx, always answers errors as `{ error, code, details? }`, and the apps still answer after.
 */
describe('malformed requests on every route (property-based)', () => {
  let system: System;
  let user: TestUser;
  let ops: DocOperation[];
  /** Ids that exist, so that malformed queries and bodies also reach the handlers behind a found resource. */
  const real: string[] = [];

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    ops = operationsOf((await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json);
    const api = client(system, user.apiKey);
    const componentId = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    real.push(componentId, (await api.post('/sources', { component_id: componentId })).body.data.id, (await api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const pathValue = (): fc.Arbitrary<string> => fc.oneof(
    fc.constantFrom(...real),
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.constantFrom('dc_', 'sc_x', 'wh_%00', '..', '%', '\u0000', 'a'.repeat(300), '$errors', 'null'),
  );
  const queryValue = fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('-1', '1e400', '[]', '{}', '%00', '\u0000', 'true', ''), fc.integer().map(String));
  const query = fc.dictionary(fc.oneof(fc.constantFrom('limit', 'after', 'before', 'expand', 'event_name', 'org_id', 'include', 'start_id', 'page', 'active'), fc.string({ minLength: 1, maxLength: 12 })), queryValue, { maxKeys: 3 });
  const body = fc.oneof(
    fc.constant(undefined),
    fc.jsonValue({ maxDepth: 4 }).map((v) => ({ json: v })),
    fc.dictionary(fc.constantFrom('component_id', 'component_code', 'configured_props', 'name', 'url', 'page', 'event', 'active', 'emitter_id', 'listener_id', 'event_name', 'org_id'), fc.jsonValue({ maxDepth: 3 })).map((v) => ({ json: v })),
    fc.string({ maxLength: 60 }).map((raw) => ({ raw, type: 'application/json' })),
    fc.constantFrom(
      { raw: '{"a":' + '['.repeat(5000), type: 'application/json' },
      { raw: '{"name":"\\u0000"}', type: 'application/json' },
      { raw: '<x/>', type: 'application/xml' },
      { raw: 'a=1&b=%00', type: 'application/x-www-form-urlencoded' },
      { raw: '{}', type: 'text/plain' },
    ),
  );

  it('never answers 5xx, always with the error shape, and the apps keep answering', async () => {
    const request = fc.record({ op: fc.integer({ min: 0, max: 1000 }), path: pathValue(), query, body, authed: fc.boolean() });
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const op = ops[r.op % ops.length];
        // A valid request to a live stream of an existing source stays open: streams get random ids only.
        if (Object.values(op.success).includes('sse') && real.includes(r.path)) return;
        const path = fillPath(op.path, Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, r.path])));
        const qs = new URLSearchParams(r.query).toString();
        const b = r.body as { json?: unknown; raw?: string; type?: string } | undefined;
        const res = await fetch(`${system.origin}${path}${qs ? `?${qs}` : ''}`, {
          method: op.method,
          headers: {
            ...(r.authed ? { authorization: `Bearer ${user.apiKey}` } : {}),
            ...(b ? { 'content-type': b.type ?? 'application/json' } : {}),
          },
          body: op.method === 'GET' || !b ? undefined : b.raw ?? JSON.stringify(b.json),
        });
        const text = await res.text();
        seen.add(res.status);
        expect([op.method, op.path, res.status < 500]).toEqual([op.method, op.path, true]);
        if (res.status >= 400) {
          const parsed = JSON.parse(text) as Json;
          expect(parsed).toEqual({ error: expect.any(String), code: expect.any(String), ...(parsed.details !== undefined ? { details: expect.any(Object) } : {}) });
        }
      }),
      { numRuns: 1000, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
    expect([...seen].some((s) => s === 400)).toBe(true);
    const health = await fetch(`${system.origin}/healthz`);
    expect(health.status).toBe(200);
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(200);
  });
});
