import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin } from './support/accounts';
import { apiOnlySystem } from './support/system-with-user';
import { HTTP_SOURCE } from './support/components';
import { rawRequest } from './support/raw-http';

/** What a fourth audit of README.md, docs/*.md and the spec, run example by example against the apps, found otherwise. */
describe('API to the letter, fourth pass', () => {
  const ctx = apiOnlySystem();

  it('sends Cache-Control: no-store and X-Content-Type-Options: nosniff with every answer, also those written below the hooks (431, 414, 400 not HTTP, CONNECT)', async () => {
    const auth = `Authorization: Bearer ${ctx.user.apiKey}\r\n`;
    const requests: [string, number][] = [
      [`GET /v1/users/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      [`GET /v1/users/me?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414],
      [`GET /v1/sources/${'a'.repeat(600)} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 414],
      [`GET /v1/sources/%E0%A4%A HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 400],
      ['NOT HTTP AT ALL\r\n\r\n', 400],
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
      [`GET /v1/users/me HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 200],
    ];
    for (const [request, status] of requests) {
      const res = await rawRequest(ctx.system.origin, request);
      const line = request.slice(0, 40);
      expect([line, res.status]).toEqual([line, status]);
      expect([line, /^cache-control: no-store\r?$/im.test(res.headers), /^x-content-type-options: nosniff\r?$/im.test(res.headers)]).toEqual([line, true, true]);
    }
    expect((await ctx.api.get('/users/me')).status).toBe(200);
  });

  it("subscribes an auto-subscription's listener to the sources and workflows created afterwards only, as the OpenAPI document now says (it said \"sources, present and future\")", async () => {
    const component = (await ctx.api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    const before = (await ctx.api.post('/sources', { component_id: component })).body.data.id as string;
    const webhook = (await ctx.api.post('/webhooks', { url: 'https://example.com/hook' })).body.data.id as string;
    expect((await ctx.api.post(`/auto_subscriptions?event_name=$errors&listener_id=${webhook}`)).status).toBe(200);
    const after = (await ctx.api.post('/sources', { component_id: component })).body.data.id as string;
    const workflow = (await ctx.api.post('/workflows', { name: 'auto', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default defineComponent({ async run() {} })' }] })).body.data.id as string;
    const emitters = (await ctx.api.get('/users/me/subscriptions')).body.data.map((s: { emitter_id: string }) => s.emitter_id);
    expect(emitters.sort()).toEqual([after, workflow].sort());
    expect(emitters).not.toContain(before);

    const openapi = (await (await fetch(`${ctx.system.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { summary: string; parameters: { name: string; in: string; schema: { description: string } }[] }>> };
    const auto = openapi.paths['/v1/auto_subscriptions'].post;
    expect(auto.summary).toBe("Subscribe a listener to $errors or $logs of the owner's sources and workflows created from now on");
    const listener = auto.parameters.find((p) => p.in === 'query' && p.name === 'listener_id')!;
    expect(listener.schema.description).toBe('dc_…, p_… or wh_…');
  });

  it('publishes to the registry only a key <app_name_slug>-<slugified-component-name> of its own name, as the shipped components now are (any <app>-<words> was taken)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'reg-')), 'thing.mjs');
    const code = (key: string, name: string): string => `export default { key: "${key}", name: "${name}", version: "1.0.0", props: { http: "$.interface.http" }, async run(event) { this.$emit(event); } };`;
    writeFileSync(file, code('acme-other-thing', 'New Thing'));
    expect(() => admin(ctx.system, ['registry', 'publish', file])).toThrow('error: registry key "acme-other-thing" must be <app_name_slug>-<slugified-component-name>: acme-new-thing for the name "New Thing"');
    writeFileSync(file, code('acme_corp-new-thing-instant', 'New Thing (Instant)'));
    expect(admin(ctx.system, ['registry', 'publish', file])).toMatchObject({ key: 'acme_corp-new-thing-instant', created: true });

    const slug = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
    for (const key of ['http-custom-response', 'http-request-counter', 'rss-new-item-in-feed', 'schedule-cron', 'schedule-interval']) {
      const { name } = (await ctx.api.get(`/components/registry/${key}`)).body.data as { name: string };
      expect([key, name, key.endsWith(`-${slug(name)}`) && !key.slice(0, -slug(name).length - 1).includes('-')]).toEqual([key, name, true]);
    }
  });

  it('names the query parameters of a start_id after its end_id in details, as for after and before together', async () => {
    const component = (await ctx.api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    const source = (await ctx.api.post('/sources', { component_id: component })).body.data.id as string;
    const res = await ctx.api.del(`/sources/${source}/events?start_id=1700000000001-0&end_id=1700000000000-0`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'start_id must not be after end_id', code: 'invalid_request', details: { in: 'query', fields: ['start_id', 'end_id'], start_id: '1700000000001-0', end_id: '1700000000000-0' } });
  });
});
