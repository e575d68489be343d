import { apiOnlySystem } from './support/system-with-user';

const CODE = `module.exports = { name: "Paged", version: "0.0.1", props: {
  project: { type: "string", async options({ page, prevContext }) { return { options: [String(prevContext)], context: { nextPageToken: "p" + (page + 1) } }; } },
}, async run() {} };`;

/**
 * docs/api.md: the options route takes `prevContext` (or `prev_context`), and a parameter given twice is refused, never
 * one of its values picked. Both names at once answered with prevContext's value, prev_context's dropped.
 */
describe('POST /components/{id}/props/{prop}/options: prevContext under its two names', () => {
  const ctx = apiOnlySystem();

  it('reads either name, and refuses both at once wherever they come from', async () => {
    const id = (await ctx.api.post('/components', { component_code: CODE })).body.data.id as string;
    const path = `/components/${id}/props/project/options`;
    for (const name of ['prevContext', 'prev_context']) {
      const res = await ctx.api.post(path, { page: 1, [name]: 'tok-1' });
      expect([name, res.status, res.body]).toEqual([name, 200, { data: { options: ['tok-1'], context: { nextPageToken: 'p2' } } }]);
    }
    const refused = (where: 'query' | 'body') => ({ error: 'prevContext and prev_context are one parameter: give one of them', code: 'invalid_request', details: { in: where, fields: ['prevContext', 'prev_context'] } });
    const both = await ctx.api.post(path, { prevContext: 'a', prev_context: 'b' });
    expect([both.status, both.body]).toEqual([400, refused('body')]);
    const split = await ctx.api.post(`${path}?prev_context=b`, { prevContext: 'a' });
    expect([split.status, split.body]).toEqual([400, refused('body')]);
    const inQuery = await ctx.api.post(`${path}?prevContext=a&prev_context=b`);
    expect([inQuery.status, inQuery.body]).toEqual([400, refused('query')]);
  });
});
