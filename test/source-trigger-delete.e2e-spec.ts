import { client, createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * A source a workflow names as its trigger by id (`trigger.source: "dc_…"`) is not deleted while the workflow names
 * it (409 naming the workflows); once the trigger is changed it is. A delete racing a deploy that names the source
 * ends with the source there and named, or gone and the deploy refused, never a workflow naming a deleted source.
 */
const SOURCE = 'module.exports = { name: "Plain", version: "1", props: {}, async run() {} };';
const STEP = [{ name: 's', code: 'export default { async run() {} }' }];

describe('deleting a source a workflow names as its trigger', () => {
  let system: System;
  let a: TestUser;
  const api = () => client(system, a.apiKey);
  const newSource = async () => {
    const res = await api().post('/sources', { component_code: SOURCE });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  const workflow = async (name: string, trigger: unknown) => {
    const res = await api().post('/workflows', { name, trigger, steps: STEP });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };

  beforeAll(async () => {
    system = await startSystem();
    a = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('answers 409 naming the workflows, and deletes the source once no workflow names it', async () => {
    const [used, other] = [await newSource(), await newSource()];
    const ids = [await workflow('by-id-1', { source: used }), await workflow('by-id-2', { source: used })].sort();
    const refused = await api().del(`/sources/${used}`);
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([409, 'conflict', { id: used, workflow_id: ids[0], workflow_ids: ids }]);
    expect(refused.body.error).toBe(`source ${used} is the trigger of workflows ${ids.join(', ')}: change the workflow's trigger (PUT /v1/workflows/${ids[0]}, trigger.source) or delete the workflow first`);
    expect((await api().get(`/sources/${used}`)).status).toBe(200);

    // One workflow's trigger changed, the other deleted: nothing names it any more.
    expect((await api().put(`/workflows/${ids[0]}`, { name: 'moved', trigger: { source: other }, steps: STEP })).status).toBe(200);
    const one = await api().del(`/sources/${used}`);
    expect([one.status, one.body.details]).toEqual([409, { id: used, workflow_id: ids[1], workflow_ids: [ids[1]] }]);
    expect(one.body.error).toMatch(new RegExp(`^source ${used} is the trigger of workflow ${ids[1]}: `));
    expect((await api().del(`/workflows/${ids[1]}`)).status).toBe(204);
    expect((await api().del(`/sources/${used}`)).status).toBe(204);
    expect((await api().get(`/sources/${used}`)).status).toBe(404);
    // A workflow naming the deleted source is refused as before.
    const gone = await api().post('/workflows', { name: 'gone', trigger: { source: used }, steps: STEP });
    expect([gone.status, gone.body.details?.path]).toEqual([400, 'trigger.source']);
  });

  it('ends a delete racing a deploy or create that names the source consistent: the source named, or gone and the workflow refused', async () => {
    for (let round = 0; round < 10; round++) {
      const source = await newSource();
      const name = `race-${round}`;
      // Even rounds deploy an existing workflow to the source, odd ones create one naming it.
      const existing = round % 2 === 0 ? await workflow(name, { manual: {} }) : undefined;
      const def = { name, trigger: { source }, steps: STEP };
      const [stored, del] = await Promise.all([
        existing ? api().put(`/workflows/${existing}`, def) : api().post('/workflows', def),
        // Started a little later each round, to meet the deploy at different points of it.
        new Promise((r) => setTimeout(r, (round % 4) * 3)).then(() => api().del(`/sources/${source}`)),
      ]);
      const exists = (await api().get(`/sources/${source}`)).status === 200;
      const id = existing ?? stored.body.data?.id;
      const trigger = id ? (await api().get(`/workflows/${id}`)).body.data.trigger : undefined;
      if (exists) {
        expect([stored.status, del.status, del.body.details?.workflow_id, trigger]).toEqual([200, 409, id, { source }]);
      } else {
        expect([del.status, stored.status, stored.body.details?.path, trigger]).toEqual([204, 400, 'trigger.source', existing ? { manual: {} } : undefined]);
      }
    }
  });
});
