import { client, createUser, TestUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { deployHttpSource, postUntilOk } from './support/http-sources';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * Busy sources of one account running the same code (RUN_BATCH_ACROSS_SOURCES: their runs ready at the same moment go
 * to the sandbox as one task): each source keeps its own order, db, errors, answers and events.
 */
const COUNTER = `module.exports = {
  name: "Counter", version: "1",
  props: { db: "$.service.db", http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    if (event.body.fail) throw new Error("failed at " + event.body.i);
    const n = (this.db.get("n") ?? 0) + 1;
    this.db.set("n", n);
    this.http.respond({ status: 200, body: JSON.stringify({ i: event.body.i, n }) });
    this.$emit({ i: event.body.i, n }, { id: String(event.body.i) });
  },
};`;

const SOURCES = 4;
const ROUNDS = 12;

describe('sources of one account run together', () => {
  let system: System;
  let user: TestUser;
  let port: string;
  beforeAll(async () => {
    port = String(await freePort());
    system = await startSystem({ PARTITIONS: '1', HTTP_RATE_PER_SEC: '0', RUNNER_METRICS_PORT: port });
    user = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("keeps each source's order, db, errors, answers and events its own", async () => {
    const sources = [];
    for (let s = 0; s < SOURCES; s++) sources.push(await deployHttpSource(system, user, COUNTER));
    // Routed before the rounds start: each source's count goes on from its answer.
    const base = await Promise.all(sources.map(async (s) => ((await (await postUntilOk(s.url, { i: 0 })).json()) as { n: number }).n));
    const answers: string[][] = sources.map(() => []);
    for (let round = 1; round <= ROUNDS; round++) {
      // The last source fails in round 5: its run throws before any db write or respond().
      const results = await Promise.all(
        sources.map((s, k) => fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i: round, fail: k === SOURCES - 1 && round === 5 }) }).then(async (r) => `${r.status} ${await r.text()}`)),
      );
      results.forEach((r, k) => answers[k].push(r));
    }
    const ok = (from: number, skip?: number) =>
      Array.from({ length: ROUNDS }, (_, j) => j + 1).map((i) => (i === skip ? expect.stringMatching(/^502 .*failed at 5/) : `200 ${JSON.stringify({ i, n: from + i - (skip !== undefined && i > skip ? 1 : 0) })}`));
    for (let k = 0; k < SOURCES - 1; k++) expect(answers[k]).toEqual(ok(base[k]));
    expect(answers[SOURCES - 1]).toEqual(ok(base[SOURCES - 1], 5));

    const summaries = async (id: string, name = '') =>
      ((await client(system, user.apiKey).get(`/sources/${id}/event_summaries?limit=100&expand=event${name ? `&event_name=${encodeURIComponent(name)}` : ''}`)).body.data ?? []) as { event: { i?: number } }[];
    for (const [k, s] of sources.entries()) {
      const failing = k === SOURCES - 1;
      const expected = Array.from({ length: ROUNDS + 1 }, (_, i) => i).filter((i) => !failing || i !== 5);
      const emitted = await eventually(
        async () => {
          const seen = [...new Set((await summaries(s.id)).map((e) => e.event?.i).filter((i): i is number => typeof i === 'number'))].sort((a, b) => a - b);
          return seen.length >= expected.length ? seen : undefined;
        },
        { what: `the events of source ${k}`, timeoutMs: 60_000 },
      );
      expect(emitted).toEqual(expected);
      const errors = await eventually(async () => (!failing || (await summaries(s.id, '$errors')).length ? summaries(s.id, '$errors') : undefined), { what: `the $errors of source ${k}` });
      expect(errors.map((e) => JSON.stringify(e.event).includes('failed at 5'))).toEqual(failing ? [true] : []);
    }
  });

  it('ran the sources together in a task (runner_run_task_sources)', async () => {
    const m = await scrapeMetrics(`http://127.0.0.1:${port}/metrics`);
    expect(m.runner_run_task_sources_sum).toBeGreaterThan(m.runner_run_task_sources_count);
  });
});
