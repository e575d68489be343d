'use strict';
// `npm run bench -- large-results`: what one account's large run results cost every other account. Account B's
// source answers each request itself (respond()); it is asked every 20 ms, first while nothing else runs, then while
// account A's source emits 60 or 120 events of 500 KB in one run (30 or 60 MB: a run's result may be 64 MiB), each a
// string, or 60 events of 40,000 small objects each (about 450 KB of JSON: many values, the costly kind to read).
// Printed for each: B's request latency (p50 / p99 / max) and how long A's events took to be indexed, with the load
// average.
const os = require('node:os');
const path = require('node:path');
const ROOT = path.join(__dirname, '..');
const { api, createUser, percentile, startSystem, until } = require(path.join(ROOT, 'bench/support/system'));

const BIG = `module.exports = { name: "Big", version: "1", props: { http: "$.interface.http" },
  async run(event) {
    const { n, round, values } = event.body;
    const pad = "h".repeat(500000);
    const many = () => Array.from({ length: 40000 }, (_, k) => ({ k }));
    for (let i = 0; i < n; i++) this.$emit(values ? { i, many: many() } : { i, pad: pad + i });
    this.$emit({ round });
  } };`;
const RESPONDER = 'module.exports = { name: "R", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run() { this.http.respond({ status: 200, body: "pong" }); } };';
/** [events, of small values] */
const ROUNDS = [[0], [60], [120], [60, true], [60], [120], [60, true]];

const send = (url, body) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

async function deploy(system, user, code) {
  const res = await api(system, user.apiKey).post('/sources', { component_code: code });
  if (res.status !== 200) throw new Error(`deploy: ${res.status} ${JSON.stringify(res.body)}`);
  const source = { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  await until(async () => (await send(source.url, { n: 0, round: 0 })).status === 200, { what: 'the source to run', timeoutMs: 60_000 });
  return source;
}

async function main() {
  const system = await startSystem({ HTTP_RATE_PER_SEC: '0', EMITS_MAX_BYTES: String(1024 * 1024 * 1024) });
  try {
    const a = createUser(system, 'a');
    const b = createUser(system, 'b');
    const responder = await deploy(system, b, RESPONDER);
    const big = await deploy(system, a, BIG);
    // The run's last event, a small one, is listed once the round's events are indexed.
    const newest = async () => (await api(system, a.apiKey).get(`/sources/${big.id}/event_summaries?limit=1`)).body.data[0]?.event?.round;
    console.log(`large results: ${os.cpus().length} cores; account B's request latency while account A's run emits N events of 500 KB`);
    console.log('| A emits | B p50 / p99 / max | A indexed in | load average |\n|---|---|---|---|');
    for (const [round, [n, values]] of ROUNDS.entries()) {
      const latencies = [];
      let pinging = true;
      const pinger = (async () => {
        while (pinging) {
          const t = performance.now();
          await send(responder.url, {});
          latencies.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await new Promise((r) => setTimeout(r, 1000));
      let took = '';
      if (n) {
        const t0 = performance.now();
        await send(big.url, { n, round, values });
        await until(async () => (await newest()) === round, { what: 'the events indexed', timeoutMs: 300_000, intervalMs: 100 });
        took = `${Math.round(performance.now() - t0)} ms`;
      } else {
        await new Promise((r) => setTimeout(r, 3000));
      }
      await new Promise((r) => setTimeout(r, 1000));
      pinging = false;
      await pinger;
      latencies.sort((x, y) => x - y);
      const ms = (q) => Math.round(percentile(latencies, q));
      const what = n ? (values ? `${n} × 40,000 values (${Math.round(n * 0.45)} MB)` : `${n} (${n / 2} MB)`) : 'nothing';
      console.log(`| ${what} | ${ms(0.5)} / ${ms(0.99)} / ${Math.round(latencies.at(-1))} ms (${latencies.length} requests) | ${took} | ${load()} |`);
    }
  } finally {
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
