import { Client } from 'pg';
import { connect } from 'nats';
import { Names, sha256Hex } from '@app/contracts';
import { natsAdmin } from './support/env';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A hostile tenant (A) against the workflows and what they share with every account, a third pass: values that take
 * the form the platform keeps encrypted values in, the secrets of another account (B) among them.
 */
const ECHO = 'export default defineComponent({ props: { o: { type: "object" } }, async run() { return { o: this.o }; } });';
const ENC_DEFAULT = 'export default defineComponent({ props: { o: { type: "object", default: { k: { $enc: "AAAA" } } } }, async run() { return this.o; } });';
const SOURCE = 'module.exports = { name: "Obj", version: "1", props: { o: { type: "object" }, http: "$.interface.http" }, async run() {} };';

type Res = { status: number; body: any; text: string }; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('workflows against a hostile tenant, a third pass', () => {
  let system: System;
  let pg: Client;
  let a: TestUser;
  let b: TestUser;
  const as = (u: TestUser) => client(system, u.apiKey);

  beforeAll(async () => {
    system = await startSystem();
    pg = new Client({ connectionString: system.databaseUrl });
    await pg.connect();
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await pg?.end();
    await system?.stop();
  });

  /** The newest run record once the workflow has `n` of them. */
  const nthRun = (id: string, n: number) =>
    eventually(async () => {
      const runs = (await as(a).get(`/workflows/${id}/runs`)).body?.data as { status: string; steps: { return_value?: unknown; error?: unknown }[] }[] | undefined;
      return runs && runs.length >= n ? runs[0] : undefined;
    }, { what: `run ${n} of ${id}` });

  it('refuses a prop value in the form of an encrypted one ({ "$enc": "…" }), given or a default, in a step, a source and a trigger source', async () => {
    const refused = (res: Res, code: string, path: string | undefined, message: RegExp) => {
      expect([res.status, res.body?.code, res.body?.details?.path]).toEqual([400, code, path]);
      expect(res.body.error).toMatch(message);
    };
    const step = (o: unknown, code = ECHO) => ({ name: `enc-${Math.random()}`, trigger: { manual: {} }, steps: [{ name: 's', code, props: o === undefined ? {} : { o } }] });
    refused(await as(a).post('/workflows', step({ $enc: 'AAAA' })), 'invalid_workflow', 'steps[0].props.o', /^steps\[0\]\.props\.o: the value is an object with a "\$enc" string/);
    refused(await as(a).post('/workflows', step({ a: [1, { $enc: 'AAAA' }] })), 'invalid_workflow', 'steps[0].props.o', /^steps\[0\]\.props\.o: o\.a\[1\] is an object with a "\$enc" string/);
    refused(await as(a).post('/workflows', step(undefined, ENC_DEFAULT)), 'invalid_workflow', 'steps[0].props.o', /o\.k is an object with a "\$enc" string/);
    refused(await as(a).post('/sources', { component_code: SOURCE, configured_props: { o: { $enc: 'AAAA' } } }), 'invalid_props', undefined, /^configured_props\.o: the value is an object/);
    refused(await as(a).post('/workflows', { name: 'enc-trigger', trigger: { source: { code: SOURCE, props: { o: { $enc: 'AAAA' } } } }, steps: [{ name: 's', code: ECHO, props: { o: {} } }] }), 'invalid_workflow', 'trigger.source', /configured_props\.o: the value is an object/);
    // Not a `$enc` string: a value like any other, stored, shown and redeployed as given.
    const plain = await as(a).post('/workflows', step({ $enc: 1, x: { $enc: null } }));
    expect([plain.status, plain.body.data?.steps[0].props]).toEqual([200, { o: { $enc: 1, x: { $enc: null } } }]);
    const again = await as(a).put(`/workflows/${plain.body.data.id}`, step({ $enc: 1, x: { $enc: null } }));
    expect([again.status, again.body.data?.steps[0].props]).toEqual([200, { o: { $enc: 1, x: { $enc: null } } }]);
    expect((await as(a).get('/users/me/sources')).body.data).toEqual([]);
  });

  it("hands a step what its templates inserted as it is: another account's secret, encrypted, is not decrypted for it", async () => {
    // B's workflow secret as stored: the form a ciphertext A came by (a backup, a log) would have.
    const secretB = `b-token-${Math.random().toString(36).slice(2)}`;
    const wfB = await as(b).post('/workflows', { name: 'b-flow', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default { async run() {} }' }], secrets: { TOKEN: secretB } });
    expect(wfB.status).toBe(200);
    const sealed = (await pg.query('select secrets from workflows where id = $1', [wfB.body.data.id])).rows[0].secrets.TOKEN as { $enc: string };
    expect(sealed).toEqual({ $enc: expect.any(String) });

    const wfA = await as(a).post('/workflows', { name: 'a-echo', trigger: { manual: {} }, steps: [{ name: 'echo', code: ECHO, props: { o: '{{steps.trigger.event.blob}}' } }] });
    expect(wfA.status).toBe(200);
    expect((await as(a).post(`/workflows/${wfA.body.data.id}/run`, { event: { blob: { wrapped: sealed } } })).status).toBe(202);
    const nested = await nthRun(wfA.body.data.id, 1);
    expect(JSON.stringify(nested)).not.toContain(secretB);
    expect([nested.status, nested.steps[0].return_value]).toEqual(['success', { o: { wrapped: sealed } }]);
    // The whole value, and a made-up one: data, handed on (it failed the step: "Invalid authentication tag length").
    const cases: [unknown, unknown][] = [[{ blob: sealed }, sealed], [{ blob: { $enc: 'AAAA' } }, { $enc: 'AAAA' }]];
    for (const [i, [event, expected]] of cases.entries()) {
      expect((await as(a).post(`/workflows/${wfA.body.data.id}/run`, { event })).status).toBe(202);
      const run = await nthRun(wfA.body.data.id, i + 2);
      expect(JSON.stringify(run)).not.toContain(secretB);
      expect([run.status, run.steps[0].return_value]).toEqual(['success', { o: expected }]);
    }
  });

  it("drops a deleted workflow's waiting sends by its id, without reading the sends every other account keeps waiting", async () => {
    const wfB = await as(b).post('/workflows', { name: 'b-sends', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default { async run() {} }' }] });
    expect(wfB.status).toBe(200);
    // A's sends held back by its silent receivers (10,000 here; nothing bounds how many), and two of B's, due in an hour.
    const due = Date.now() + 3_600_000;
    const park = (owner: string, workflowId: string, n: number) =>
      pg.query(
        `insert into send_retries (id, owner_id, attempt, due_at_ms, message, created_at_ms)
         select 'inv_' || $2::text || '_' || i || ':s0', $1::text, 1, $3::bigint, json_build_object('kind', 'http', 'ownerId', $1::text, 'workflowId', $2::text, 'invocationId', 'inv_' || i, 'index', 0, 'payload', json_build_object('url', 'http://127.0.0.1:9/x')), $3::bigint from generate_series(1, $4::int) i`,
        [owner, workflowId, due, n],
      );
    await park(a.id, 'p_aaaaaaaaaaaaaaaaaaaa', 10_000);
    await park(b.id, wfB.body.data.id, 2);
    await pg.query('analyze send_retries');
    const plan = (await pg.query(`explain delete from send_retries where workflow_id = $1`, [wfB.body.data.id])).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('send_retries_workflow_id_index');
    expect((await as(b).del(`/workflows/${wfB.body.data.id}`)).status).toBe(204);
    const left = (await pg.query('select owner_id, count(*)::int as n from send_retries group by owner_id order by owner_id')).rows;
    expect(left).toEqual([{ owner_id: a.id, n: 10_000 }]);
    await pg.query('delete from send_retries where owner_id = $1', [a.id]);
  });
});

/** The api every account shares, against one account's large components: a page of workflows or sources shows their props, not their code. */
describe("the api's memory against one account's workflows of large components", () => {
  let system: System;
  beforeAll(async () => {
    // No collector (it would put back code a test removes), and this replica's store of some code trusted for 250 ms only.
    system = await startSystem({ COMPONENT_GC_INTERVAL_MS: '0', COMPONENT_GC_GRACE_MS: '1000' }, { apps: [] });
    // A heap far smaller than what the answers below read when they read each component's code (48 × 40 MB).
    await system.startApp('api', 'api', { NODE_OPTIONS: '--max-old-space-size=160' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('answers 48 lists and gets at once of a workflow of ten 4 MB steps, and another account meanwhile', async () => {
    const a = client(system, createUser(system).apiKey);
    const b = client(system, createUser(system).apiKey);
    const steps: { name: string; action: string }[] = [];
    for (let i = 0; i < 10; i++) {
      const code = `export default { name: "big ${i}", key: "big-${i}", version: "0.0.1", type: "action", async run() { return ${i}; } };\n// ${String(i).repeat(4_000_000)}`;
      const c = await a.post('/components', { component_code: code });
      expect(c.status).toBe(200);
      steps.push({ name: `s${i}`, action: c.body.data.id });
    }
    const wf = await a.post('/workflows', { name: 'big', trigger: { manual: {} }, steps });
    expect(wf.status).toBe(200);
    const source = await a.post('/sources', { component_code: `module.exports = { name: "Big", version: "1", props: { http: "$.interface.http" }, async run() {} };\n// ${'s'.repeat(4_000_000)}` });
    expect(source.status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 48 }, (_, i) => (i % 3 === 0 ? a.get('/users/me/workflows') : i % 3 === 1 ? a.get(`/workflows/${wf.body.data.id}`) : a.get('/users/me/sources')).catch((e: Error) => ({ status: 0, text: e.message }))),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(48).fill(200));
    expect((await b.get('/users/me/workflows')).status).toBe(200);
    expect(system.procs.get('api')?.exitCode).toBeNull();
  });

  it('deploys 24 times at once 8 workflows of ten 4 MB steps, and answers another account meanwhile', async () => {
    const a = client(system, createUser(system).apiKey);
    const b = client(system, createUser(system).apiKey);
    const steps: { name: string; action: string }[] = [];
    for (let i = 0; i < 10; i++) {
      const code = `export default { name: "deploy ${i}", key: "deploy-${i}", version: "0.0.1", type: "action", props: { n: { type: "integer", optional: true } }, async run() { return ${i}; } };\n// ${String(i).repeat(4_000_000)}`;
      const c = await a.post('/components', { component_code: code });
      expect(c.status).toBe(200);
      steps.push({ name: `s${i}`, action: c.body.data.id });
    }
    const ids: string[] = [];
    for (let w = 0; w < 8; w++) {
      const wf = await a.post('/workflows', { name: `deploy-${w}`, trigger: { manual: {} }, steps });
      expect(wf.status).toBe(200);
      ids.push(wf.body.data.id);
    }
    // Each deploy read the ten components whole twice (resolving the steps, publishing them): 24 × 80 MB.
    const deploys = await Promise.all(
      Array.from({ length: 24 }, (_, i) => {
        const props = { n: i };
        return a.put(`/workflows/${ids[i % 8]}`, { name: `deploy-${i % 8}`, trigger: { manual: {} }, steps: steps.map((s) => ({ ...s, props })) }).catch((e: Error) => ({ status: 0, text: e.message, body: undefined }));
      }),
    );
    expect(deploys.map((r) => r.status)).toEqual(Array(24).fill(200));
    // Each workflow as one of its three deploys left it.
    for (const [w, id] of ids.entries()) {
      const shown = (await a.get(`/workflows/${id}`)).body.data.steps as { component_id: string; props: { n: number } }[];
      expect(shown.map((s) => s.component_id)).toEqual(steps.map((s) => s.action));
      expect([w, w + 8, w + 16]).toContain(shown[0].props.n);
      expect(new Set(shown.map((s) => s.props.n)).size).toBe(1);
    }
    expect((await b.get('/users/me/workflows')).status).toBe(200);
    expect(system.procs.get('api')?.exitCode).toBeNull();
  });

  it("puts a step's code into the object store again on a deploy when it is missing there", async () => {
    const a = client(system, createUser(system).apiKey);
    const code = `export default defineComponent({ async run() { return "${Math.random()}"; } });`;
    const def = { name: 'restore', trigger: { manual: {} }, steps: [{ name: 's', code }] };
    const wf = await a.post('/workflows', def);
    expect(wf.status).toBe(200);
    const nc = await connect(natsAdmin());
    try {
      const os = await nc.jetstream().views.os(new Names(system.natsPrefix).componentsStore);
      expect(Buffer.from((await os.getBlob(sha256Hex(code))) ?? []).toString()).toBe(code);
      await os.delete(sha256Hex(code));
      expect(await os.getBlob(sha256Hex(code))).toBeNull();
      // Past the 250 ms this replica trusts its own store of the code for.
      await new Promise((r) => setTimeout(r, 500));
      expect((await a.put(`/workflows/${wf.body.data.id}`, def)).status).toBe(200);
      expect(Buffer.from((await os.getBlob(sha256Hex(code))) ?? []).toString()).toBe(code);
    } finally {
      await nc.close();
    }
  });
});
