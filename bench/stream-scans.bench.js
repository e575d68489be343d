'use strict';
// `npm run bench -- stream-scans`: reading a source's messages of EMITS a batch at a time, as a range delete
// (`DELETE /sources/{id}/events?start_id&end_id`) and index recovery do, over 1,200 small messages (a few hundred
// bytes) and over 40 of about 1 MiB. First the reading alone, on a stream of its own, three ways: 2 messages a fetch, 500 a
// fetch, and bounded by bytes (`boundedFetches`, what both do now); each with the most bytes one batch held. Then a
// range delete of each through the api, timed from the request until EMITS holds none of the range. With the load
// average: the machine is shared.
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { connect, StorageType } = require('nats');
const ROOT = path.join(__dirname, '..');
const { natsAdmin, startSystem, createUser, insertSource, until } = require(path.join(ROOT, 'bench/support/system'));
const { encodeJson, Names } = require(path.join(ROOT, 'dist/libs/contracts/src'));
const { boundedFetches } = require(path.join(ROOT, 'dist/libs/nats/src/bounded-fetch'));

const SETS = { small: { n: 1200, pad: 'p'.repeat(200) }, large: { n: 40, pad: 'x'.repeat(1024 * 1024 - 4096) } };
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const ms = (t) => (performance.now() - t).toFixed(0);

/** Reads `subject` of `stream` to its end with a fixed count a fetch; returns [fetches, most bytes in one]. */
async function byCount(consumer, count) {
  let fetches = 0;
  let most = 0;
  for (;;) {
    fetches++;
    let held = 0;
    let last;
    for await (const m of await consumer.fetch({ max_messages: count, expires: 2000 })) {
      held += m.data.length;
      last = m;
      if (m.info.pending === 0) break;
    }
    most = Math.max(most, held);
    if (!last || last.info.pending === 0) return [fetches, most];
  }
}

async function byBytes(consumer, lastSeq, maxPayload) {
  let fetches = 0;
  let most = 0;
  for await (const batch of boundedFetches(consumer, lastSeq, maxPayload)) {
    fetches++;
    most = Math.max(most, batch.reduce((n, m) => n + m.data.length, 0));
  }
  return [fetches, most];
}

async function scans(nc, prefix) {
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const stream = `${prefix}_SCAN`;
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.scan.>`], storage: StorageType.Memory, max_bytes: 128 * 1024 * 1024 });
  try {
    console.log('\nReading alone (own stream, memory storage)\n| messages | way | fetches | most bytes in one batch | ms | load average |\n|---|---|---|---|---|---|');
    for (const [name, { n, pad }] of Object.entries(SETS)) {
      let lastSeq = 0;
      for (let i = 0; i < n; i++) lastSeq = (await js.publish(`${prefix}.scan.${name}`, Buffer.from(JSON.stringify({ i, pad })))).seq;
      for (const way of ['2 a fetch', '500 a fetch', 'by bytes']) {
        const consumer = await js.consumers.get(stream, { filterSubjects: `${prefix}.scan.${name}` });
        const t = performance.now();
        const [fetches, most] = way === 'by bytes' ? await byBytes(consumer, lastSeq, nc.info.max_payload) : await byCount(consumer, parseInt(way, 10));
        console.log(`| ${n} ${name} | ${way} | ${fetches} | ${most.toLocaleString('en')} | ${ms(t)} | ${load()} |`);
        await consumer.delete();
      }
    }
  } finally {
    await jsm.streams.delete(stream).catch(() => undefined);
  }
}

async function deletes(nc, system) {
  const user = createUser(system);
  const names = new Names(system.natsPrefix);
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  console.log('\nA range delete through the api (DELETE until EMITS holds none of the range)\n| messages | ms | load average |\n|---|---|---|');
  for (const [name, { n, pad }] of Object.entries(SETS)) {
    const src = await insertSource(system, user.id);
    const now = Date.now();
    const ids = [];
    for (let i = 0; i < n; i++) {
      const id = `${now}-${i}`;
      ids.push(id);
      await js.publish(names.emit(src), encodeJson({ id, emitterId: src, ownerId: user.id, name: '', event: { i, pad }, emitId: `emit_${randomBytes(8).toString('hex')}`, ts: now, emittedAtMs: now }));
    }
    const stored = async () => (await jsm.streams.info(names.emitsStream, { subjects_filter: names.emit(src) })).state.subjects?.[names.emit(src)] ?? 0;
    const t = performance.now();
    const res = await fetch(`${system.baseUrl}/sources/${src}/events?start_id=${ids[0]}&end_id=${ids[n - 1]}`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}` } });
    if (res.status !== 202) throw new Error(`DELETE answered ${res.status}: ${await res.text()}`);
    await until(async () => (await stored()) === 0, { what: `the ${name} range erased`, intervalMs: 20 });
    console.log(`| ${n} ${name} | ${ms(t)} | ${load()} |`);
  }
}

async function main() {
  const system = await startSystem({ EMITS_MAX_BYTES: String(256 * 1024 * 1024) }, { apps: ['api'] });
  const nc = await connect(natsAdmin());
  try {
    console.log(`stream scans: ${os.cpus().length} cores, NATS max_payload ${nc.info.max_payload}`);
    await scans(nc, system.natsPrefix);
    await deletes(nc, system);
  } finally {
    await nc.close();
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
