'use strict';
// `npm run bench -- sse-replay`: a resumed event stream (`Last-Event-ID`) replaying what EMITS stored of its source
// before it opened, to a client that reads at once: 5,000 small events (a few hundred bytes) and 100 of about 300 KB,
// timed from the request until the last event's frame arrived. Then the same events stored while a new stream is open
// (live), timed from the first publish until the last event's frame arrived (the publishing alone timed too). With the
// load average: the machine is shared.
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

/** Opens the stream of `src` (resumed before every stored event with `lastEventId`); answers its body once its handshake came. */
async function open(system, src, apiKey, ac, lastEventId) {
  const headers = { authorization: `Bearer ${apiKey}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) };
  const res = await fetch(`${system.origin}/sse/dc/${src}/emits`, { headers, signal: ac.signal });
  if (res.status !== 200) throw new Error(`the stream answered ${res.status}: ${await res.text()}`);
  return res.body[Symbol.asyncIterator]();
}

/** Reads a stream's body until the frame of the last of `ids`, checking every one came. */
async function readThrough(body, ids) {
  let frames = 0;
  let tail = '\n';
  const decoder = new TextDecoder();
  for (let next = await body.next(); !next.done; next = await body.next()) {
    const text = tail + decoder.decode(next.value, { stream: true });
    frames += text.split('\nid: ').length - tail.split('\nid: ').length;
    if (text.includes(`\nid: ${ids.at(-1)}\n`)) break;
    tail = text.slice(-100);
  }
  if (frames < ids.length) throw new Error(`${frames} of ${ids.length} events arrived`);
}

/** Replays the stored `ids` of `src` to a stream resumed before all of them; answers ms from the request. */
async function replay(system, src, apiKey, ids) {
  const ac = new AbortController();
  const t = performance.now();
  try {
    await readThrough(await open(system, src, apiKey, ac, '1-0'), ids);
    return performance.now() - t;
  } finally {
    ac.abort();
  }
}

/** Stores `n` events while a new stream of `src` is open; answers ms from the first publish to the last frame, and the publishing's. */
async function live(system, nc, names, src, user, n, pad) {
  const ac = new AbortController();
  try {
    const body = await open(system, src, user.apiKey, ac);
    await body.next(); // the handshake
    const t = performance.now();
    const stored = store(nc, names, src, user.id, n, pad).then((ids) => ({ ids, ms: performance.now() - t }));
    const { ids, ms: publishMs } = await stored;
    await readThrough(body, ids);
    return { ms: performance.now() - t, publishMs };
  } finally {
    ac.abort();
  }
}

async function main() {
  const system = await startSystem({}, { apps: ['api'] });
  const nc = await connect(natsAdmin());
  try {
    const user = createUser(system);
    const names = new Names(system.natsPrefix);
    console.log(`sse replay: ${os.cpus().length} cores, NATS max_payload ${nc.info.max_payload}`);
    console.log('\n| replay: events | round | ms | events/s | load average |\n|---|---|---|---|---|');
    for (const [name, { n, pad }] of Object.entries(SETS)) {
      const src = await insertSource(system, user.id);
      const ids = await store(nc, names, src, user.id, n, pad);
      for (let round = 1; round <= ROUNDS; round++) {
        const ms = await replay(system, src, user.apiKey, ids);
        console.log(`| ${n} ${name} | ${round} | ${ms.toFixed(0)} | ${Math.round((n / ms) * 1000)} | ${load()} |`);
      }
    }
    console.log('\n| live: events | round | ms | events/s | publishing ms | load average |\n|---|---|---|---|---|---|');
    for (const [name, { n, pad }] of Object.entries(SETS)) {
      for (let round = 1; round <= ROUNDS; round++) {
        const src = await insertSource(system, user.id);
        const { ms, publishMs } = await live(system, nc, names, src, user, n, pad);
        console.log(`| ${n} ${name} | ${round} | ${ms.toFixed(0)} | ${Math.round((n / ms) * 1000)} | ${publishMs.toFixed(0)} | ${load()} |`);
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
