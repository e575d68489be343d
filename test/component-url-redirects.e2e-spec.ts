import { createServer, Server } from 'node:http';
import { apiOnlySystem } from './support/system-with-user';

/**
 * docs/api.md: a component_url's relative imports are fetched relative to the URL of the file that imports them, and
 * the URL may redirect (at most 5 times). A file's imports resolve against the URL that answered it, after its
 * redirects, as a browser resolves a module's: they were resolved against the URL as asked, so a redirect to another
 * directory fetched the wrong files (and a redirect for every path looped until "more than 100 files").
 */
const ENTRY = `import { props } from "./lib/props.mjs";
export default { key: "moved-url", name: "Moved URL", version: "0.0.1", type: "source", props, async run() {} };`;
const PROPS = 'export const props = { http: "$.interface.http", greeting: { type: "string", label: "Greeting" } };';

describe('component_url behind a redirect', () => {
  const ctx = apiOnlySystem();
  let server: Server;
  let origin: string;
  const asked: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '';
      asked.push(path);
      if (path === '/latest/entry.mjs') return void res.writeHead(302, { location: '/releases/v2/entry.mjs' }).end();
      if (path === '/hop/entry.mjs') return void res.writeHead(301, { location: `${origin}/latest/entry.mjs` }).end();
      const body = ({ '/releases/v2/entry.mjs': ENTRY, '/releases/v2/lib/props.mjs': PROPS } as Record<string, string>)[path];
      if (body === undefined) return void res.writeHead(404).end('not found');
      res.writeHead(200, { 'content-type': 'application/javascript' }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
  });

  it('fetches the relative imports of a redirected file next to the file that answered', async () => {
    for (const path of ['/latest/entry.mjs', '/hop/entry.mjs']) {
      asked.length = 0;
      const res = await ctx.api.post('/components', { component_url: `${origin}${path}` });
      expect([path, res.status, res.body.error]).toEqual([path, 200, undefined]);
      expect(res.body.data.component_url).toBe(`${origin}${path}`);
      expect(res.body.data.configurable_props).toEqual([
        { name: 'http', type: '$.interface.http' },
        { name: 'greeting', type: 'string', label: 'Greeting' },
      ]);
      expect(asked).toContain('/releases/v2/lib/props.mjs');
      expect(asked.filter((p) => p.startsWith('/latest/lib') || p.startsWith('/hop/lib'))).toEqual([]);
    }
  });
});
