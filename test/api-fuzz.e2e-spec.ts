import fc from 'fast-check';
import { client, createUser, TestUser } from './support/accounts';
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

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    ops = operationsOf((await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const pathValue = fc.oneof(
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

  const request = fc.record({ op: fc.integer({ min: 0, max: 1000 }), path: pathValue, query, body, authed: fc.boolean() });

  it('never answers 5xx, always with the error shape, and the apps keep answering', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const op = ops[r.op % ops.length];
        // (An SSE route answers 200 and stays open only for an existing source: this system has none.)
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
