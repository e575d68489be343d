'use strict';
// The whole path: HTTP request to a source endpoint → api → INVOCATIONS → runner
// (the source emits) → EMITS → delivery → signed POST received by a local
// webhook receiver. Figures: sustained events/s, and emit→receipt latency at a
// steady request rate. Knobs: BENCH_EVENTS (20000), BENCH_RATE (1000),
// BENCH_SECONDS (10), BENCH_ENDPOINTS (20), BENCH_CONCURRENCY (128),
// BENCH_PROFILE_APP=api,runner,delivery (CPU profiles into /tmp/prof).
const path = require('node:path');
const http = require('node:http');
const { Webhook } = require('standardwebhooks');
const ROOT = path.join(__dirname, '..', '..', '..');
const { startSystem, createUser, api, percentile, until, cpuAccount } = require(path.join(ROOT, 'bench/support/system'));

const EVENTS = Number(process.env.BENCH_EVENTS || 20000);
const RATE = Number(process.env.BENCH_RATE || 1000);
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS || 20);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 128);
const FORWARDER = `module.exports = {
  name: "Forwarder", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ t: event.body.t, n: event.body.n, pad: "x".repeat(200) }); },
};`;

function startReceiver() {
  const r = { receipts: new Map(), verified: 0, bad: 0, verifier: undefined, url: '' };
  let n = 0;
  r.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      if (r.verifier && n++ % 20 === 0) {
        try {
          r.verifier.verify(body, req.headers);
          r.verified++;
        } catch {
          r.bad++;
        }
      }
      const id = `${req.headers['x-pd-emitter-id']}:${req.headers['webhook-id']}`;
      if (!r.receipts.has(id)) r.receipts.set(id, { at, sentAt: JSON.parse(body).t, emittedAtId: Number(String(req.headers['x-pd-event-id']).split('-')[0]) });
      res.writeHead(200).end();
    });
  });
  r.server.keepAliveTimeout = 30_000;
  return new Promise((resolve) => r.server.listen(0, '127.0.0.1', () => {
    r.url = `http://127.0.0.1:${r.server.address().port}/hook`;
    resolve(r);
  }));
}

function post(agent, url, n) {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.end(JSON.stringify({ t: Date.now(), n }));
  });
}

async function main() {
  const system = await startSystem({ PARTITIONS: '32', HTTP_RATE_PER_SEC: '0' });
  const receiver = await startReceiver();
  try {
    const user = createUser(system);
    const client = api(system, user.apiKey);
    const hook = (await client.post('/webhooks', { url: receiver.url })).body.data;
    receiver.verifier = new Webhook(hook.secret);
    const urls = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const res = await client.post('/sources', { component_code: FORWARDER, name: `f${i}` });
      if (res.status !== 200) throw new Error(`creating a source failed: ${JSON.stringify(res.body)}`);
      urls.push(res.body.data.configured_props.http.endpoint_url);
    }
    await client.post('/subscriptions', { emitter_id: 'dc_*', listener_id: hook.id });
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    // Warm-up: every source deployed on the runner and delivering.
    await until(async () => {
      await Promise.all(urls.map((u, i) => post(agent, u, -1 - i)));
      return receiver.receipts.size >= ENDPOINTS;
    }, { what: 'every source to deliver', intervalMs: 1000 });
    await new Promise((r) => setTimeout(r, 2000));
    receiver.receipts.clear();

    // 1. Sustained: EVENTS requests, CONCURRENCY in flight, spread over the endpoints.
    const apps = ['api', 'runner', 'delivery'];
    const account = cpuAccount(system, apps);
    const started = Date.now();
    let next = 0;
    let failed = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const n = next++;
        if ((await post(agent, urls[n % urls.length], n)) !== 200) failed++;
      }
    }));
    const ingested = Date.now();
    const complete = await until(async () => receiver.receipts.size >= EVENTS - failed, { what: 'every event delivered', timeoutMs: 600_000 }).then(() => true, () => false);
    const last = Math.max(...[...receiver.receipts.values()].map((r) => r.at));
    const cpu = account.done(last - started, receiver.receipts.size);
    const throughput = Math.round((receiver.receipts.size / (last - started)) * 1000);
    console.log(`HTTP ingest → signed POST: ${receiver.receipts.size}/${EVENTS} events in ${last - started} ms = ${throughput} events/s (ingest ${Math.round((EVENTS / (ingested - started)) * 1000)} req/s, ${failed} requests failed)${complete ? '' : ' INCOMPLETE'}`);
    console.log(`  CPU during the run: ${cpu}`);
    receiver.receipts.clear();

    // 2. Latency at a steady rate: request sent → signed POST received.
    const count = RATE * SECONDS;
    const t0 = Date.now();
    const pending = [];
    for (let i = 0; i < count; i++) {
      const wait = t0 + (i * 1000) / RATE - Date.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      pending.push(post(agent, urls[i % urls.length], EVENTS + i));
    }
    await Promise.all(pending);
    await until(async () => receiver.receipts.size >= count, { what: 'the latency run delivered', timeoutMs: 300_000 }).catch(() => undefined);
    const lat = [...receiver.receipts.values()].map((r) => r.at - r.sentAt).sort((a, b) => a - b);
    const emitLat = [...receiver.receipts.values()].map((r) => r.at - r.emittedAtId).sort((a, b) => a - b);
    console.log(`latency at ${RATE} req/s for ${SECONDS} s (${receiver.receipts.size}/${count} delivered):`);
    console.log(`  request sent → received: p50 ${percentile(lat, 0.5)} ms, p99 ${percentile(lat, 0.99)} ms, max ${lat[lat.length - 1]} ms`);
    console.log(`  emit (event id time) → received: p50 ${percentile(emitLat, 0.5)} ms, p99 ${percentile(emitLat, 0.99)} ms, max ${emitLat[emitLat.length - 1]} ms`);
    console.log(`  signatures verified with standardwebhooks: ${receiver.verified} ok, ${receiver.bad} bad`);
    console.log(JSON.stringify({ bench: 'delivery-ingest', events: EVENTS, throughput_events_per_s: throughput, rate: RATE, request_to_receipt_ms: { p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) }, emit_to_receipt_ms: { p50: percentile(emitLat, 0.5), p99: percentile(emitLat, 0.99) } }));
  } finally {
    receiver.server.closeAllConnections();
    receiver.server.close();
    await system.stop();
  }
}

main().catch((e) => {
  console.error(`ingest bench failed: ${e.stack || e.message}`);
  process.exit(1);
});
