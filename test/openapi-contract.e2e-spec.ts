import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv from 'ajv';
import createClient from 'openapi-fetch';
import { admin, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { DocOperation, fillPath, Json, operationsOf } from './support/openapi-requests';

/** A workflow whose run fails when its event says so. */
const WORKFLOW = (name: string) => ({ name, trigger: { manual: {} }, steps: [{ name: 'check', code: 'export default defineComponent({ async run({ steps }) { if (steps.trigger.event.fail) throw new Error("failed"); return 1; } });' }] });
import { eventually, startSystem, System } from './support/system';

/**
 * Generates one valid request per operation of the served OpenAPI document and checks the live
 * answer against what the document declares for it: the status is one it lists, a success body
 * matches its schema, an error body is `{ error, code, details? }`.
 */
describe('the OpenAPI document at /v1/openapi.json', () => {
  let system: System;
  let user: TestUser;
  let doc: Json;
  const ids: Record<string, string> = {};
  const ajv = new Ajv({ strict: false, allErrors: true });

  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown; type: string | null }> => {
    const res = await fetch(system.origin + path, {
      method,
      headers: { authorization: `Bearer ${user.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, type: res.headers.get('content-type') };
  };

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'Doc Org', '--orgname', `doc-${user.id.slice(3, 10)}`, '--email', 'doc@org.test']);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    ids.org = org.id;
    ids.component = ((await call('POST', '/v1/components', { component_code: HTTP_SOURCE })).json as { data: { id: string } }).data.id;
    ids.source = ((await call('POST', '/v1/sources', { component_id: ids.component })).json as { data: { id: string } }).data.id;
    ids.listener = ((await call('POST', '/v1/sources', { component_id: ids.component, name: 'listener' })).json as { data: { id: string } }).data.id;
    ids.webhook = ((await call('POST', '/v1/webhooks', { url: 'https://example.com/hook' })).json as { data: { id: string } }).data.id;
    const hook = 'export default { name: "Hooked", version: "1", props: { github: { type: "app", app: "github" }, hook: { type: "$.interface.apphook", appProp: "github", eventNames: ["push"] } }, async run(e) { this.$emit(e) } };';
    const hookComponent = ((await call('POST', '/v1/components', { component_code: hook })).json as { data: { id: string } }).data.id;
    ids.hookSource = ((await call('POST', '/v1/sources', { component_id: hookComponent })).json as { data: { id: string } }).data.id;
    ids.workflow = ((await call('POST', '/v1/workflows', WORKFLOW('doc-flow'))).json as { data: { id: string } }).data.id;
    // A failed run, so that replay has an $errors event to run again.
    await call('POST', `/v1/workflows/${ids.workflow}/run`, { event: { fail: true } });
    ids.errorEvent = await eventually(async () => ((await call('GET', `/v1/workflows/${ids.workflow}/$errors/event_summaries`)).json as { data: { id: string }[] }).data[0]?.id, { what: 'the $errors event' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('is served without an API key and is a valid OpenAPI 3.1 document', async () => {
    const res = await fetch(`${system.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Json;
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it('marks the extensions beyond Pipedream\'s API', () => {
    const ops = operationsOf(doc);
    const ext = (method: string, path: string) => ops.find((o) => o.method === method && o.path === path)?.extension;
    expect(ext('POST', '/v1/sources/{id}/run')).toBe(true);
    expect(ext('GET', '/v1/sources/{id}')).toBe(true);
    expect(ext('POST', '/v1/components/{keyOrId}/props/{prop}/options')).toBe(true);
    expect(ext('POST', '/v1/sources')).toBe(false);
    expect(ext('GET', '/v1/users/me')).toBe(false);
    expect(ext('GET', '/v1/users/me/subscriptions')).toBe(false);
    expect(ext('DELETE', '/v1/webhooks/{id}')).toBe(true);
    expect(ext('GET', '/sse/dc/{id}/emits')).toBe(true);
    expect(ext('GET', '/v1/openapi.json')).toBe(true);
    expect(ext('GET', '/metrics')).toBe(true);
    // Generated clients name methods by operationId: each is unique.
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
  });

  /** Path values, query and body of a valid request for an operation. */
  function requestFor(op: DocOperation): { path: string; body?: unknown } {
    const resource = op.path.startsWith('/v1/webhooks')
      ? ids.webhook
      : op.path.startsWith('/v1/workflows') || op.path.startsWith('/sse/p/')
        ? ids.workflow
        : op.path.endsWith('/app_hook')
          ? ids.hookSource
          : ids.source;
    const path = fillPath(op.path, { id: resource, keyOrId: ids.component, key: 'schedule-interval', prop: 'http', org_id: ids.org, channel: '$errors', app: 'github' });
    const query = op.parameters.some((p) => p.in === 'query' && p.name === 'limit') ? '?limit=2' : '';
    const bodies: Record<string, unknown> = {
      postComponents: { component_code: HTTP_SOURCE },
      postComponentsKeyOrIdPropsPropOptions: { page: 0 },
      postSources: { component_id: ids.component, name: 'from the document' },
      putSourcesId: { component_id: ids.component, name: 'renamed' },
      postSourcesIdRun: { event: { hello: 'world' } },
      postAppsAppHookEvents: { event_name: 'push', event: { ref: 'main' } },
      postSourcesIdAppHook: { event_name: 'push', event: { ref: 'main' } },
      postSubscriptions: { emitter_id: ids.source, listener_id: ids.listener },
      deleteSubscriptions: { emitter_id: ids.source, listener_id: ids.listener, event_name: '' },
      postAutoSubscriptions: { event_name: '$errors', listener_id: ids.listener },
      postWebhooks: { url: 'https://example.com/other' },
      putWebhooksId: { name: 'renamed' },
      postWorkflows: WORKFLOW('doc-flow-2'),
      putWorkflowsId: WORKFLOW('doc-flow'),
      postWorkflowsIdRun: { event: { hello: 'world' } },
      postWorkflowsIdReplay: { event_id: ids.errorEvent },
    };
    return { path: path + query, body: bodies[op.operationId] };
  }

  it('answers every operation as declared', async () => {
    const ops = operationsOf(doc);
    // Deletions last, the source itself at the very end.
    const rank = (op: DocOperation): number => (op.method !== 'DELETE' ? 0 : op.path === '/v1/sources/{id}' ? 2 : 1);
    const checked: string[] = [];
    for (const op of [...ops].sort((a, b) => rank(a) - rank(b))) {
      const name = `${op.method} ${op.path}`;
      const { path, body } = requestFor(op);
      if (Object.values(op.success).includes('sse')) {
        const ctl = new AbortController();
        const res = await fetch(system.origin + path, { headers: { authorization: `Bearer ${user.apiKey}` }, signal: ctl.signal });
        expect([name, res.status, res.headers.get('content-type')]).toEqual([name, 200, expect.stringMatching(/^text\/event-stream/)]);
        ctl.abort();
        checked.push(name);
        continue;
      }
      if (Object.values(op.success).includes('text')) {
        const res = await fetch(system.origin + path);
        expect([name, res.status, res.headers.get('content-type'), (await res.text()).length > 0]).toEqual([name, 200, expect.stringMatching(/^text\/plain/), true]);
        checked.push(name);
        continue;
      }
      const res = await call(op.method, path, body);
      expect([name, op.statuses.includes(res.status)]).toEqual([name, true]);
      const declared = op.success[String(res.status)];
      if (res.status >= 400) {
        expect([name, res.json]).toEqual([name, { error: expect.any(String), code: expect.any(String), ...((res.json as Json).details ? { details: expect.any(Object) } : {}) }]);
        continue;
      }
      if (declared === null) expect([name, res.json]).toEqual([name, undefined]);
      else if (declared && declared !== 'sse' && declared !== 'text') {
        const validate = ajv.compile(declared);
        expect([name, validate(res.json) ? 'valid' : ajv.errorsText(validate.errors)]).toEqual([name, 'valid']);
      }
      checked.push(name);
    }
    // Every operation succeeded.
    const expected = ops.map((o) => `${o.method} ${o.path}`);
    expect(checked.sort()).toEqual(expected.sort());
  });

  it('lists every body type an operation reads, and each is read as declared (only application/json was listed, forms and +json types were read too)', async () => {
    const ops = Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
    const withBody = ops.filter(({ op }) => op.requestBody);
    expect(withBody.length).toBeGreaterThan(10);
    let forms = 0;
    for (const { method, path, op } of withBody) {
      const name = `${method} ${path}`;
      const content = (op.requestBody as { content: Record<string, { schema: Json }> }).content;
      const types = Object.keys(content);
      expect([name, types.filter((t) => t !== 'application/x-www-form-urlencoded')]).toEqual([name, ['application/json', 'application/*+json', 'text/plain']]);
      if (types.includes('application/x-www-form-urlencoded')) forms++;
      // A field no route has, sent in each declared type: every one is read and checked (400 naming it), none is a 415
      // or "not valid JSON". The +json range is sent as one of its types.
      const target = system.origin + fillPath(path, { id: 'dc_nope', keyOrId: 'sc_nope', key: 'nope', prop: 'http', org_id: 'o_nope', channel: '$errors', app: 'github' });
      for (const type of types) {
        const body = type === 'application/x-www-form-urlencoded' ? 'not_a_field_x=1' : '{"not_a_field_x":"1"}';
        const sent = type === 'application/*+json' ? 'application/merge-patch+json' : type;
        const res = await fetch(target, { method, headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': sent }, body });
        expect([name, type, res.status, await res.json()]).toEqual([name, type, 400, expect.objectContaining({ code: 'invalid_request', details: expect.objectContaining({ in: 'body', fields: ['not_a_field_x'] }) })]);
      }
    }
    // Routes that take fields from the query string take them as a form; those that read JSON only do not list one.
    expect(forms).toBeGreaterThan(5);
    expect(forms).toBeLessThan(withBody.length);
  });

  it('generates a typed client with openapi-typescript that compiles, and openapi-fetch works against the service', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pd-client-'));
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
    const cli = join(__dirname, '..', 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
    const gen = spawnSync(process.execPath, [cli, join(dir, 'openapi.json'), '-o', join(dir, 'pd-api.d.ts')], { encoding: 'utf8' });
    expect([gen.status, gen.stderr.includes('✘')]).toEqual([0, false]);
    expect(readFileSync(join(dir, 'pd-api.d.ts'), 'utf8')).toContain('"/v1/sources/{id}"');
    // A typed call compiles against the generated types (a wrong field would not).
    writeFileSync(
      join(dir, 'use.ts'),
      `import type { paths } from './pd-api';
type Body = paths['/v1/sources']['post']['requestBody'];
const body: NonNullable<Body>['content']['application/json'] = { component_id: 'sc_x', configured_props: {} };
type Source = paths['/v1/sources/{id}']['get']['responses']['200']['content']['application/json']['data'];
const slug: (s: Source) => string = (s) => s.name_slug;
export { body, slug };
`,
    );
    const tsc = spawnSync(process.execPath, [join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '--strict', '--skipLibCheck', join(dir, 'use.ts')], { encoding: 'utf8' });
    expect([tsc.status, tsc.stdout]).toEqual([0, '']);

    const pd = createClient<Record<string, never>>({ baseUrl: system.origin, headers: { authorization: `Bearer ${user.apiKey}` } });
    type Loose = (path: string, init?: Record<string, unknown>) => Promise<{ data?: Json; error?: Json; response: Response }>;
    const POST = pd.POST as unknown as Loose;
    const GET = pd.GET as unknown as Loose;
    const created = await POST('/v1/sources', { body: { component_id: ids.component, name: 'generated client' } });
    expect(created.response.status).toBe(200);
    const id = (created.data!.data as { id: string }).id;
    const read = await GET('/v1/sources/{id}', { params: { path: { id } } });
    expect((read.data!.data as { name_slug: string }).name_slug).toBe('generated-client');
    const listed = await GET('/v1/users/me/sources', { params: { query: { limit: 1 } } });
    expect((listed.data!.page_info as { count: number }).count).toBe(1);
    const missing = await GET('/v1/sources/{id}', { params: { path: { id: 'dc_missing' } } });
    expect(missing.error).toEqual({ error: 'source dc_missing not found', code: 'not_found', details: { id: 'dc_missing' } });
  });
});
