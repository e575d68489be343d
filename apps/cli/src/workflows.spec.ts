import { ApiClient } from './api-client';
import { listServer } from './list-server.spec-helper';
import { findWorkflow, resolveTarget, resolveWorkflow, Workflow } from './workflows';

const workflow = (id: string, name: string): Workflow => ({ id, name, active: true, deployment_id: 'd_1', trigger: { manual: {} }, steps: [], secrets: [] });

/** The caller has a personal workflow "flow"; org o_1 has "org-flow" only, org o_2 its own "flow". */
const LISTS: Record<string, Workflow[]> = {
  '/v1/users/me/workflows': [workflow('p_mine', 'flow')],
  '/v1/orgs/o_1/workflows': [workflow('p_org1', 'org-flow')],
  '/v1/orgs/o_2/workflows': [workflow('p_org2', 'flow')],
  '/v1/users/me/sources': [],
  '/v1/orgs/o_1/sources': [],
  '/v1/orgs/o_2/sources': [],
};

describe('workflow references', () => {
  let client: ApiClient;
  let close: () => void;
  beforeAll(async () => {
    ({ client, close } = await listServer((path) => LISTS[path]));
  });
  afterAll(() => close());

  it('with an org, looks a name up in the org only, never among the caller\'s own workflows', async () => {
    expect((await findWorkflow(client, 'flow'))?.id).toBe('p_mine');
    expect(await findWorkflow(client, 'flow', 'o_1')).toBeUndefined();
    expect((await findWorkflow(client, 'flow', 'o_2'))?.id).toBe('p_org2');
    await expect(resolveWorkflow(client, 'flow', 'o_1')).rejects.toThrow('workflow "flow" not found: no workflow in org o_1 has that id or name (see `pd list workflows`)');
    await expect(resolveTarget(client, 'flow', 'o_1')).rejects.toThrow('no source or workflow named "flow": not among the sources of org o_1 or your account, nor the workflows of org o_1');
    expect(await resolveTarget(client, 'org-flow', 'o_1')).toEqual({ kind: 'workflow', id: 'p_org1', name: 'org-flow' });
  });

  it('names an unknown reference as neither a source nor a workflow', async () => {
    await expect(resolveTarget(client, 'nosuch')).rejects.toThrow('no source or workflow named "nosuch" in your account (see `pd list sources` and `pd list workflows`)');
  });
});
