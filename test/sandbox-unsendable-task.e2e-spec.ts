import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A task the runner cannot serialize for an account's sandbox process fails that task, not the runner. A workflow
 * step that returned an array nested 2,000 deep (its own result passed every check) had the next step's task, which
 * carries it in `steps`, overflow `v8.serialize` in the runner's write to the sandbox, outside any task: the runner
 * process died, every account's runs on it with it, and again at each delivery of the invocation.
 */
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;
type Run = { status: string; failed_step: string | null; steps: { name: string; error?: { name: string; message: string } }[] };

describe('a task that cannot be sent to the sandbox', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem();
  });
  afterAll(async () => {
    await system?.stop();
  });

  const runOf = async (apiKey: string, steps: { name: string; code: string }[]): Promise<Run> => {
    const api = client(system, apiKey);
    const res = await api.post('/workflows', { name: 'w', trigger: { manual: {} }, steps });
    expect(res.status).toBe(200);
    const id = res.body.data.id as string;
    expect((await api.post(`/workflows/${id}/run`, {})).status).toBe(202);
    return eventually(async () => ((await api.get(`/workflows/${id}/runs`)).body.data as Run[] | undefined)?.[0], { what: `the run of ${id}`, timeoutMs: 60_000 });
  };

  it("fails the step it was for; the runner runs the other accounts' workflows on", async () => {
    const deep = await runOf(createUser(system).apiKey, [
      { name: 'deep', code: step('let v = []; for (let i = 0; i < 2000; i++) v = [v]; return v;') },
      { name: 'next', code: step('return 1;') },
    ]);
    expect({ status: deep.status, failed: deep.failed_step, error: deep.steps[1]?.error?.name }).toEqual({ status: 'error', failed: 'next', error: 'SandboxError' });
    expect(deep.steps[1].error?.message).toMatch(/^could not hand .* to the sandbox process: it cannot be serialized \(Maximum call stack size exceeded\)/);
    expect((await runOf(createUser(system).apiKey, [{ name: 'plain', code: step('return 2;') }])).status).toBe('success');
    expect(system.procs.get('runner')?.exitCode).toBeNull();
  });
});
