import { client, createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';

/** What an audit of the REST API against the spec, to the letter, found answered otherwise than the spec and docs say. */
describe('API to the letter: query parameters a route names but does not apply', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('refuses event_name on GET /workflows/{id}/$errors/event_summaries, whose path names the channel (event_name=$logs answered the $errors events)', async () => {
    const workflow = await api.post('/workflows', { name: 'errs', trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] });
    expect(workflow.status).toBe(200);
    const wf = workflow.body.data.id as string;
    for (const value of ['%24logs', '%24errors', '', 'custom']) {
      const res = await api.get(`/workflows/${wf}/$errors/event_summaries?event_name=${value}`);
      expect([value, res.status, res.body.error, res.body.details?.fields]).toEqual([value, 400, 'unknown query parameter: event_name', ['event_name']]);
    }
    expect((await api.get(`/workflows/${wf}/$errors/event_summaries?limit=5&expand=event`)).status).toBe(200);
  });

  it('reads an include or exclude that names no field (include=,) as absent, as an empty one is: every field (include=, answered {})', async () => {
    const empty = await api.get('/users/me?include=');
    expect(empty.status).toBe(200);
    for (const q of ['include=,', 'include=%20,%20', 'exclude=,,']) {
      const res = await api.get(`/users/me?${q}`);
      expect([q, res.status, res.body]).toEqual([q, 200, empty.body]);
    }
    expect((await api.get('/users/me?include=,id,')).body).toEqual({ data: { id: user.id } });
  });
});
