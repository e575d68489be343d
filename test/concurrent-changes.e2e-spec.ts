import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';
import { sql } from './events.helpers';

const STEP = `export default defineComponent({ async run({ steps, $ }) { return 1; } });`;
const ROUNDS = 8;

type Answer = { status: number; text: string };

/**
 * The same change sent twice at once, or a change racing a delete of what it changes: each request
 * succeeds (idempotently), or answers 404 or 409 in the error shape — never a 500. (An update of a
 * workflow deleted meanwhile answered 500, and one of a source answered 200 for an update that was not
 * made; two `registry publish` of one component at once published it twice.)
 */
describe('concurrent identical and conflicting changes', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const statuses = (answers: Answer[][]): number[] => [...new Set(answers.flat().map((a) => a.status))].sort();
  const errorsShaped = (answers: Answer[][]): void => {
    for (const a of answers.flat()) {
      if (a.status < 400) continue;
      expect(JSON.parse(a.text)).toEqual(expect.objectContaining({ error: expect.any(String), code: expect.any(String) }));
    }
  };

  it('creates once what is created twice at once', async () => {
    const api = client(system, createUser(system).apiKey);
    const comp: string = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id;
    const wh: string = (await api.post('/webhooks', { url: 'https://hooks.example.com/x' })).body.data.id;
    for (let k = 0; k < ROUNDS; k++) {
      const src: string = (await api.post('/sources', { component_id: comp, name: `emitter ${k}` })).body.data.id;
      const subs = await Promise.all([0, 1, 2].map(() => api.post('/subscriptions', { emitter_id: src, listener_id: wh })));
      expect(subs.map((s) => s.status)).toEqual([200, 200, 200]);
      expect(new Set(subs.map((s) => s.body.data.id)).size).toBe(1);
      const autos = await Promise.all([0, 1].map(() => api.post('/auto_subscriptions', { listener_id: wh, event_name: k % 2 ? '$errors' : '$logs' })));
      expect(new Set(autos.map((s) => `${s.status}:${s.body.data.id}`)).size).toBe(1);
      const workflows = await Promise.all([0, 1, 2].map(() => api.post('/workflows', { name: `flow ${k}`, trigger: { http: {} }, steps: [{ name: 'a', code: STEP }] })));
      expect(workflows.map((w) => w.status).sort()).toEqual([200, 409, 409]);
    }
    const [{ n }] = await sql<{ n: number }>(system, `select count(*)::int as n from subscriptions where listener_id = $1 and event_name = ''`, [wh]);
    expect(n).toBe(ROUNDS);
  });

  it('answers 404, never 500, to an update that races a delete', async () => {
    const api = client(system, createUser(system).apiKey);
    const comp: string = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id;
    const sourceAnswers: Answer[][] = [];
    const workflowAnswers: Answer[][] = [];
    for (let k = 0; k < ROUNDS; k++) {
      const src: string = (await api.post('/sources', { component_id: comp, name: `s${k}` })).body.data.id;
      const [put, ...dels] = await Promise.all([api.put(`/sources/${src}`, { component_id: comp, name: `t${k}` }), api.del(`/sources/${src}`), api.del(`/sources/${src}`)]);
      sourceAnswers.push([put, ...dels]);
      // An update answered 200 was made: the source was not deleted before it.
      if (put.status === 200) expect(put.body.data.name).toBe(`t${k}`);
      const def = { name: `w${k}`, trigger: { http: {} }, steps: [{ name: 'a', code: STEP }] };
      const wf: string = (await api.post('/workflows', def)).body.data.id;
      workflowAnswers.push(await Promise.all([api.put(`/workflows/${wf}`, def), api.put(`/workflows/${wf}`, def), api.del(`/workflows/${wf}`)]));
      expect((await api.get(`/workflows/${wf}`)).status).toBe(404);
      expect((await api.get(`/sources/${src}`)).status).toBe(404);
    }
    expect(statuses(sourceAnswers).filter((s) => ![200, 204, 404].includes(s))).toEqual([]);
    expect(statuses(workflowAnswers).filter((s) => ![200, 204, 404].includes(s))).toEqual([]);
    errorsShaped([...sourceAnswers, ...workflowAnswers]);
  });

  it('keeps only the inline trigger sources workflows run when their deploys race each other or a delete', async () => {
    const api = client(system, createUser(system).apiKey);
    const inline = { source: { code: HTTP_SOURCE, props: {} } };
    const def = (name: string, trigger: object) => ({ name, trigger, steps: [{ name: 'a', code: STEP }] });
    const workflows: string[] = [];
    for (let k = 0; k < ROUNDS / 2; k++) {
      // The same name created at once: one workflow, and the losers' sources do not stay.
      const created = await Promise.all([0, 1, 2].map(() => api.post('/workflows', def(`c${k}`, inline))));
      expect(created.map((w) => w.status).sort()).toEqual([200, 409, 409]);
      workflows.push(created.find((w) => w.status === 200)?.body.data.id);
      // Two deploys giving a manual workflow an inline source at once: the one it ends up with stays.
      const updated: string = (await api.post('/workflows', def(`u${k}`, { manual: {} }))).body.data.id;
      expect((await Promise.all([0, 1].map(() => api.put(`/workflows/${updated}`, def(`u${k}`, inline))))).map((r) => r.status)).toEqual([200, 200]);
      workflows.push(updated);
      // A deploy racing a delete: nothing stays.
      const gone: string = (await api.post('/workflows', def(`d${k}`, { manual: {} }))).body.data.id;
      const raced = await Promise.all([api.put(`/workflows/${gone}`, def(`d${k}`, inline)), api.del(`/workflows/${gone}`)]);
      expect(raced.map((r) => r.status).filter((s) => ![200, 204, 404].includes(s))).toEqual([]);
    }
    const used = await Promise.all(workflows.map(async (id) => (await api.get(`/workflows/${id}`)).body.data.trigger.source as string));
    const sources = (await api.get('/users/me/sources?limit=100')).body.data as { id: string }[];
    expect(sources.map((s) => s.id).sort()).toEqual(used.sort());
  });

  it('publishes a registry component once when two operators publish it at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reg-race-'));
    const file = join(dir, 'race.mjs');
    writeFileSync(file, `export default { key: "acme-race", name: "Race", version: "1.0.0", props: { http: "$.interface.http" }, async run(event) { this.$emit(event); } };`);
    const publish = (): Promise<{ code: number | null; out: string }> =>
      new Promise((resolve) => {
        const p = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'admin.js'), 'registry', 'publish', file], {
          env: { ...process.env, DATABASE_URL: system.databaseUrl, DATA_DIR: system.env.DATA_DIR },
        });
        let out = '';
        p.stdout.on('data', (d: Buffer) => (out += d.toString()));
        p.on('close', (code) => resolve({ code, out }));
      });
    const results = await Promise.all([publish(), publish()]);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    const created = results.map((r) => (JSON.parse(r.out) as { created: boolean; id: string }));
    expect(created.map((c) => c.created).sort()).toEqual([false, true]);
    expect(created[0].id).toBe(created[1].id);
    const [{ n }] = await sql<{ n: number }>(system, `select count(*)::int as n from components where key = 'acme-race' and version = '1.0.0'`);
    expect(n).toBe(1);
  });
});
