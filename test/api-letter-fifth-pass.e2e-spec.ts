import { apiOnlySystem } from './support/system-with-user';

/** What an audit of docs/api.md against the running service found answered otherwise than the docs say. */
describe('API to the letter, fifth pass: docs/api.md against the running service', () => {
  const ctx = apiOnlySystem();

  it('keeps only the fields an include names: one naming fields no object has answers each object as {}, one naming none (include=, include=,) every field', async () => {
    const me = (await ctx.api.get('/users/me')).body;
    expect(Object.keys(me.data).length).toBeGreaterThan(1);
    for (const q of ['include=', 'include=,', 'include=%20,%20', 'exclude=nope']) expect([q, (await ctx.api.get(`/users/me?${q}`)).body]).toEqual([q, me]);
    expect((await ctx.api.get('/users/me?include=nope')).body).toEqual({ data: {} });
    expect((await ctx.api.get('/users/me?include=nope,id')).body).toEqual({ data: { id: ctx.user.id } });
    await ctx.api.post('/webhooks', { url: 'https://example.com/include' });
    const list = await ctx.api.get('/users/me/webhooks?include=nope');
    expect([list.status, list.body.data]).toEqual([200, [{}]]);
  });
});
