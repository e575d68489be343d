import { Client } from 'pg';
import { client, createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * Prop values in the form of an encrypted one (`{ "$enc": "…" }`) stored before such values were refused: the
 * platform never sealed them, and they do not open with its key. Reading them back to revalidate (an update, a
 * workflow's deploy, the options and reload routes of a source) answers a 400 naming the prop, never a 500, and a
 * new value given for that prop is taken.
 */
const SOURCE = 'module.exports = { name: "Enc", version: "1", props: { o: { type: "object", optional: true }, s: { type: "string", secret: true }, http: "$.interface.http" }, async run() {} };';
const STEP = 'export default defineComponent({ props: { o: { type: "object" }, s: { type: "string", secret: true } }, async run() { return 1; } });';
const FORGED = { $enc: 'AAAA' };

type Res = { status: number; body: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('prop values of the encrypted form stored before they were refused', () => {
  let system: System;
  let pg: Client;
  let a: TestUser;
  const api = () => client(system, a.apiKey);

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    pg = new Client({ connectionString: system.databaseUrl });
    await pg.connect();
    a = createUser(system);
  });
  afterAll(async () => {
    await pg?.end();
    await system?.stop();
  });

  const refused = (res: Res, code: string, prop: Record<string, string>, message: RegExp) => {
    expect({ status: res.status, code: res.body?.code, details: res.body?.details }).toEqual({ status: 400, code, details: expect.objectContaining(prop) });
    expect(res.body.error).toMatch(message);
  };

  it("a source's update and its options and reload routes answer 400 naming the prop; a new value is taken", async () => {
    const created = await api().post('/sources', { component_code: SOURCE, configured_props: { o: { k: 1 }, s: 'secret-1' } });
    expect(created.status).toBe(200);
    const { id, component_id: componentId } = created.body.data;
    await pg.query(`update sources set configured_props = configured_props || $2::jsonb where id = $1`, [id, JSON.stringify({ o: { k: FORGED }, s: FORGED })]);

    refused(await api().put(`/sources/${id}`, { component_id: componentId, name: 'renamed' }), 'invalid_props', { prop: 'o' }, /^configured_props\.o: o\.k in its stored value is an object with a "\$enc" string, stored before .*give o a new value/);
    // A secret's mask keeps the stored value, which is not one the platform sealed.
    refused(await api().put(`/sources/${id}`, { component_id: componentId, configured_props: { o: { k: 2 }, s: '********' } }), 'invalid_props', { prop: 's' }, /^configured_props\.s: "\*{8}" keeps the secret stored for s, and the one stored is an object with a "\$enc" string that the platform did not encrypt/);
    const reload = await api().post(`/components/${componentId}/props/reload`, { configured_props: {}, source_id: id });
    expect(reload.status).toBe(200);
    const options = await api().post(`/components/${componentId}/props/o/options`, { configured_props: {}, source_id: id });
    expect(options.status).toBe(200);

    const put = await api().put(`/sources/${id}`, { component_id: componentId, name: 'renamed', configured_props: { o: { k: 2 }, s: 'secret-2' } });
    expect([put.status, put.body.data?.name, put.body.data?.configured_props]).toEqual([200, 'renamed', { o: { k: 2 }, s: '********', http: expect.any(Object) }]);
    // Stored sealed again: an update that keeps it now carries it.
    expect((await api().put(`/sources/${id}`, { component_id: componentId, active: false })).status).toBe(200);
  });

  it("a workflow step's stored secret of that form: a deploy keeping it by its mask answers 400 naming the step's prop, one giving a new value is taken", async () => {
    const definition = (s: string) => ({ name: 'enc-step', trigger: { manual: {} }, steps: [{ name: 'one', code: STEP, props: { o: {}, s } }] });
    const created = await api().post('/workflows', definition('secret-1'));
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    await pg.query(`update workflows set steps = jsonb_set(steps, '{0,props,s}', $2::jsonb) where id = $1`, [id, JSON.stringify(FORGED)]);

    refused(await api().put(`/workflows/${id}`, definition('********')), 'invalid_workflow', { path: 'steps[0].props.s' }, /^steps\[0\]\.props\.s: "\*{8}" keeps the secret stored for s, and the one stored is an object with a "\$enc" string/);
    const deployed = await api().put(`/workflows/${id}`, definition('secret-2'));
    expect([deployed.status, deployed.body.data?.steps[0].props]).toEqual([200, { o: {}, s: '********' }]);
    expect((await api().put(`/workflows/${id}`, definition('********'))).status).toBe(200);
  });
});
