'use strict';
// HTTP request → respond() round trip through api + runner (+ delivery), open
// loop at a fixed request rate over keep-alive connections.
// Figures: latency p50/p90/p99/max and the achieved rate.
const path = require('node:path');
const http = require('node:http');
const ROOT = path.join(__dirname, '..', '..', '..');
const { startSystem, createUser, api, percentile, until, cpuAccount } = require(path.join(ROOT, 'bench/support/system'));

const RATE = Number(process.env.BENCH_RATE || 500);
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
// One source runs one invocation at a time (its mailbox): spread the rate over several endpoints.
const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS || 10);
const RESPONDER = `module.exports = {
  name: "Responder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: { ok: true, n: event.query.n } }); },
};`;

function request(agent, url) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end('{"x":1}');
  });
}

async function main() {
  // BENCH_PROFILE_APP=api (or runner, delivery, a comma-separated list): CPU profiles of those apps into /tmp/prof.
  const system = await startSystem({ PARTITIONS: '32', HTTP_RATE_PER_SEC: '0', EMITS_PER_SECOND_PER_ACCOUNT: '0' });
  try {
    const user = createUser(system);
    const urls = [];
    for (let i = 0; i < ENDPOINTS; i++) urls.push((await api(system, user.apiKey).post('/sources', { component_code: RESPONDER, name: `r${i}` })).body.data.configured_props.http.endpoint_url);
    const url = urls[0];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    for (const u of urls) await until(async () => (await request(agent, `${u}?n=warm`)).status === 200, { what: 'the sources to answer' });
    const seq = [];
    for (let i = 0; i < 300; i++) seq.push((await request(agent, `${url}?n=w${i}`)).ms);
    seq.sort((a, b) => a - b);
    console.log(`  sequential (one at a time): p50 ${percentile(seq, 0.5).toFixed(2)} ms, p99 ${percentile(seq, 0.99).toFixed(2)} ms`);

    const apps = ['api', 'runner', 'delivery'];
    const account = cpuAccount(system, apps);
    const total = RATE * SECONDS;
    const results = [];
    const started = performance.now();
    const pending = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      pending.push(request(agent, `${urls[i % urls.length]}?n=${i}`).then((r) => results.push(r)));
    }
    await Promise.all(pending);
    const elapsed = (performance.now() - started) / 1000;
    const ok = results.filter((r) => r.status === 200).map((r) => r.ms).sort((a, b) => a - b);
    console.log(`HTTP → respond() round trip: ${total} requests at ${RATE}/s over ${ENDPOINTS} endpoints for ${SECONDS} s (achieved ${(total / elapsed).toFixed(0)}/s), ${ok.length} answered 200`);
    console.log(`  p50 ${percentile(ok, 0.5).toFixed(2)} ms, p90 ${percentile(ok, 0.9).toFixed(2)} ms, p99 ${percentile(ok, 0.99).toFixed(2)} ms, max ${ok[ok.length - 1].toFixed(2)} ms`);
    console.log(`  CPU during the run: ${account.done(undefined, total)}`);
    agent.destroy();
  } finally {
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
