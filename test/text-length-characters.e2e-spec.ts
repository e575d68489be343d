import { apiOnlySystem } from './support/system-with-user';

const CODE = 'module.exports = { name: "Chars", version: "0.0.1", props: { http: "$.interface.http" }, async run() {} };';

/**
 * docs/api.md: a source's name is at most 200 characters (a webhook's 255, its description 2,000; a workflow's 200). A character outside
 * the Basic Multilingual Plane (an emoji) is one character, as the route's contract and Postgres count it: a name of
 * 101 to 200 emoji passed the contract and was then refused as over 200 characters.
 */
describe('text lengths count characters, not UTF-16 units', () => {
  const ctx = apiOnlySystem();

  it('takes a source name of 200 emoji and refuses one of 201 with the contract answer', async () => {
    const ok = await ctx.api.post('/sources', { component_code: CODE, name: '😀'.repeat(200) });
    expect([ok.status, ok.body.data?.name]).toEqual([200, '😀'.repeat(200)]);
    const renamed = await ctx.api.put(`/sources/${ok.body.data.id}`, { component_id: ok.body.data.component_id, name: '🎉'.repeat(200) });
    expect([renamed.status, renamed.body.data?.name]).toEqual([200, '🎉'.repeat(200)]);
    const over = await ctx.api.post('/sources', { component_code: CODE, name: '😀'.repeat(201) });
    expect([over.status, over.body.code, over.body.details?.field]).toEqual([400, 'invalid_request', 'name']);
  });

  it("takes a webhook name of 255 emoji and a description of 2,000", async () => {
    const res = await ctx.api.post('/webhooks', { url: 'https://example.com/hook', name: '😀'.repeat(255), description: '📦'.repeat(2000) });
    expect([res.status, res.body.data?.name, res.body.data?.description]).toEqual([200, '😀'.repeat(255), '📦'.repeat(2000)]);
    const over = await ctx.api.post('/webhooks', { url: 'https://example.com/hook', name: '😀'.repeat(256) });
    expect([over.status, over.body.details?.field]).toEqual([400, 'name']);
  });

  it('takes a workflow name of 200 emoji (it answered invalid_workflow "at most 200 characters")', async () => {
    const definition = (name: string) => ({ name, trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] });
    const ok = await ctx.api.post('/workflows', definition('😀'.repeat(200)));
    expect([ok.status, ok.body.data?.name]).toEqual([200, '😀'.repeat(200)]);
    const over = await ctx.api.post('/workflows', definition('😀'.repeat(201)));
    expect(over.status).toBe(400);
  });

  it('takes a component whose name and key are 255 emoji (it answered invalid_component "at most 255 characters, got 510")', async () => {
    const code = (n: number) => `module.exports = { key: "${'🔑'.repeat(n)}", name: "${'😀'.repeat(n)}", version: "0.0.1", props: { http: "$.interface.http" }, async run() {} };`;
    const ok = await ctx.api.post('/components', { component_code: code(255) });
    expect([ok.status, ok.body.data?.name, ok.body.data?.key]).toEqual([200, '😀'.repeat(255), '🔑'.repeat(255)]);
    const over = await ctx.api.post('/components', { component_code: code(256) });
    expect([over.status, over.body.code, over.body.error]).toEqual([400, 'invalid_component', 'name must be at most 255 characters, got 256']);
  });

  it('takes a channel name (a subscription\'s event_name, an event list\'s) of 255 emoji (it answered "at most 255 characters")', async () => {
    const src = await ctx.api.post('/sources', { component_code: CODE });
    const hook = await ctx.api.post('/webhooks', { url: 'https://example.com/channel' });
    const [emitter, listener] = [src.body.data.id as string, hook.body.data.id as string];
    const channel = '📣'.repeat(255);
    const sub = await ctx.api.post('/subscriptions', { emitter_id: emitter, listener_id: listener, event_name: channel });
    expect([sub.status, sub.body.data?.event_name]).toEqual([200, channel]);
    const listed = await ctx.api.get(`/sources/${emitter}/event_summaries?event_name=${encodeURIComponent(channel)}`);
    expect([listed.status, listed.body.page_info?.total_count]).toEqual([200, 0]);
    const removed = await ctx.api.del(`/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=${encodeURIComponent(channel)}`);
    expect(removed.status).toBe(204);
    const over = await ctx.api.post('/subscriptions', { emitter_id: emitter, listener_id: listener, event_name: `${channel}x` });
    expect([over.status, over.body.details?.field]).toEqual([400, 'event_name']);
  });

  it("takes a webhook url of 2,048 characters written with emoji (its path), as the route's contract does", async () => {
    const url = `https://example.com/${'🪝'.repeat(2048 - 'https://example.com/'.length)}`;
    const res = await ctx.api.post('/webhooks', { url });
    expect([res.status, res.body.data?.url]).toEqual([200, url]);
    const over = await ctx.api.post('/webhooks', { url: `${url}x` });
    expect([over.status, over.body.details?.field]).toEqual([400, 'url']);
  });
});
