'use strict';
// `npm run bench -- sse-replay`: a resumed event stream (`Last-Event-ID`) replaying what EMITS stored of its source
// before it opened, to a client that reads at once: 5,000 small events (a few hundred bytes) and 100 of about 300 KB,
// timed from the request until the last event's frame arrived. With the load average: the machine is shared.
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { connect } = require('nats');
const ROOT = path.join(__dirname, '..');
const { natsAdmin, startSystem, createUser, insertSource } = require(path.join(ROOT, 'bench/support/system'));
const { encodeJson, Names } = require(path.join(ROOT, 'dist/libs/contracts/src'));

const SETS = { small: { n: 5000, pad: 'p'.repeat(200) }, large: { n: 100, pad: 'x'.repeat(300_000) } };
const ROUNDS = 3;
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** Stores `n` events of `src` in EMITS as the runner does, in order; answers their ids. */
async function store(nc, names, src, ownerId, n, pad) {
  const js = nc.jetstream();
  const now = Date.now();
  const ids = Array.from({ length: n }, (_, i) => `${now}-${i}`);
  for (let i = 0; i < n; i += 100) {
    // One connection: the server stores its publishes in the order they were sent.
    await Promise.all(ids.slice(i, i + 100).map((id, k) => js.publish(names.emit(src), encodeJson({ id, emitterId: src, ownerId, name: '', event: { i: i + k, pad }, emitId: `emit_${randomBytes(8).toString('hex')}`, ts: now, emittedAtMs: now }))));
  }
  return ids;
}

/** Opens the stream resumed before every stored event and reads it until the frame of `lastId`; answers ms and frames. */
async function replay(system, src, apiKey, lastId, n) {
  const ac = new AbortController();
  const t = performance.now();
  const res = await fetch(`${system.origin}/sse/dc/${src}/emits`, { headers: { authorization: `Bearer ${apiKey}`, 'last-event-id': '1-0' }, signal: ac.signal });
  if (res.status !== 200) throw new Error(`the stream answered ${res.status}: ${await res.text()}`);
  let frames = 0;
  let tail = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) {
      const text = tail + decoder.decode(chunk, { stream: true });
      frames += text.split('\nid: ').length - tail.split('\nid: ').length;
      if (text.includes(`\nid: ${lastId}\n`)) break;
      tail = text.slice(-100);
    }
  } finally {
    ac.abort();
  }
  const ms = performance.now() - t;
  if (frames < n) throw new Error(`${frames} of ${n} events arrived`);
  return ms;
}

async function main() {
  const system = await startSystem({}, { apps: ['api'] });
  const nc = await connect(natsAdmin());
  try {
    const user = createUser(system);
    const names = new Names(system.natsPrefix);
    console.log(`sse replay: ${os.cpus().length} cores, NATS max_payload ${nc.info.max_payload}`);
    console.log('\n| events | round | ms | events/s | load average |\n|---|---|---|---|---|');
    for (const [name, { n, pad }] of Object.entries(SETS)) {
      const src = await insertSource(system, user.id);
      const ids = await store(nc, names, src, user.id, n, pad);
      for (let round = 1; round <= ROUNDS; round++) {
        const ms = await replay(system, src, user.apiKey, ids[n - 1], n);
        console.log(`| ${n} ${name} | ${round} | ${ms.toFixed(0)} | ${Math.round((n / ms) * 1000)} | ${load()} |`);
      }
    }
  } finally {
    await nc.close();
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
