import { join } from 'node:path';
import { bundleComponent } from '../apps/cli/src/bundle';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

type Summary = { id: string; event: Record<string, unknown> & { error?: { name: string; message: string } } };

const FIXTURE = join(__dirname, 'fixtures', 'module-interop');

/**
 * Node's module rules for imports in local files a component is bundled from (`pd deploy`), with the
 * real packages installed by the service from the npm registry: a default import of webpack-built
 * CommonJS (salesforce-webhooks, whose module.exports carries Symbol.toStringTag "Module") binds
 * module.exports, and a named import of a dual ESM/CommonJS package (@polar-sh/sdk) gives its class.
 */
describe('module interop: imports in local files of a bundled component', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;

  const save = async (dir: string, entry: string) => {
    const { code } = await bundleComponent(entry, dir);
    const res = await api.post('/components', { component_code: code });
    expect(res.body.error).toBeUndefined();
    expect(res.status).toBe(200);
    return res.body.data as { id: string; name: string };
  };

  beforeAll(async () => {
    system = await startSystem({ RUN_TIMEOUT_MS: '20000' });
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('a hook gets SalesforceClient (default import of webpack CommonJS) and Polar (named import of a dual package)', async () => {
    const c = await save(FIXTURE, join('sources', 'hooked', 'hooked.mjs'));
    const res = await api.post('/sources', { component_id: c.id, configured_props: { app: { $auth: {} } } });
    expect(res.status).toBe(200);
    const sourceId = (res.body.data as { id: string }).id;
    const [err] = await eventually(
      async () => {
        const r = await api.get(`/sources/${sourceId}/event_summaries?limit=10&expand=event&event_name=%24errors`);
        return r.status === 200 && r.body.data.length >= 1 ? (r.body.data as Summary[]) : undefined;
      },
      { timeoutMs: 240_000, what: 'the deploy hook report' },
    );
    const message = err.event.error?.message ?? '';
    expect(message).toMatch(/^bindings /);
    expect(JSON.parse(message.slice('bindings '.length))).toEqual({ salesforceCreate: 'function', polar: 'Polar' });
  }, 300_000);
});
