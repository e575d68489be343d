#!/usr/bin/env node
'use strict';
// `npm run test:faults`: the fault-injection suite. Starts the scaled-out system of `npm run cluster`
// (three NATS nodes with NATS_REPLICAS=3, two api replicas behind the round-robin, two runners, two
// delivery replicas) on its own Postgres and ports, deploys FAULT_SOURCES HTTP sources, each subscribed
// to a webhook of a local receiver, and sends FAULT_RATE requests per second across them. Then, in
// turn, one fault per phase under that load; between phases everything acknowledged must have arrived, and each
// phase starts once every stream has a leader and current replicas.
// Prints a table per fault: requests sent, acknowledged (2xx), events of acknowledged requests in the
// summaries (Postgres) and at the receiver, lost, duplicates, the longest delay and the recovery time.
// Exits 1 when an acknowledged request's event never reached the receiver or its summary is missing.
//
//   npm run test:faults                      every fault
//   npm run test:faults -- runner delivery   some of them (names in the table below)
//   FAULT_RATE=40 FAULT_SOURCES=20 FAULT_PHASE_S=20 npm run test:faults
//
// Details and the figures of a run: docs/operations.md, "Running a cluster".
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('pg');
const { ensureBuilt, log } = require('./lib/infra');
const { ensureBubblewrap } = require('./lib/bubblewrap');
const { freePortFrom } = require('./lib/nats-auth');
const { startClusterSystem } = require('./lib/cluster-system');
const { startReceiver, startLoad, phaseFigures } = require('./lib/fault-load');
const { createNetns, createClockOffset, startOwnPostgres } = require('./lib/fault-injectors');

const root = path.join(__dirname, '..');
const RATE = Number(process.env.FAULT_RATE || 40);
const SOURCES = Number(process.env.FAULT_SOURCES || 20);
const PHASE_MS = Number(process.env.FAULT_PHASE_S || 20) * 1000;
const BEFORE_MS = 5000;
const DRAIN_MS = 180_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const HTTP_SOURCE = `module.exports = {
  name: "Fault suite HTTP source",
  key: "fault-suite-http",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { summary: "request" }); },
};`;

/** The faults, in the order they run. `inject(ctx)` breaks something and puts it back (awaits the repair). */
const FAULTS = [
  { name: 'none', what: 'no fault (baseline)', inject: async () => {} },
  {
    name: 'nats-node',
    what: 'kill -9 one NATS node (not the INVOCATIONS/EMITS leader), restart it after 5 s',
    inject: async ({ system, note }) => {
      const leaders = new Set([await system.nats.leaderOf(streamName(system, 'INVOCATIONS')), await system.nats.leaderOf(streamName(system, 'EMITS'))]);
      const node = system.nats.nodes.find((n) => !leaders.has(n.name)) ?? system.nats.nodes[0];
      note(`killed ${node.name}`);
      await node.kill('SIGKILL');
      await sleep(5000);
      await node.start();
    },
  },
  {
    name: 'nats-leader',
    what: 'kill -9 the NATS node leading INVOCATIONS and EMITS, restart it after 5 s',
    inject: async ({ system, note }) => {
      const leader = await alignLeaders(system);
      const node = system.nats.node(leader.invocations);
      note(`killed ${node.name}, leader of INVOCATIONS${leader.emits === leader.invocations ? ' and EMITS' : ` (EMITS: ${leader.emits})`}`);
      await node.kill('SIGKILL');
      await sleep(5000);
      await node.start();
    },
  },
  { name: 'runner', what: 'kill -9 one runner (restarted by the supervisor)', inject: ({ system, note }) => killApp(system, 'runner-1', note) },
  { name: 'delivery', what: 'kill -9 one delivery replica (restarted by the supervisor)', inject: ({ system, note }) => killApp(system, 'delivery-1', note) },
  { name: 'api', what: 'kill -9 one api replica (restarted by the supervisor)', inject: ({ system, note }) => killApp(system, 'api-1', note) },
  {
    name: 'postgres',
    what: 'crash Postgres (immediate shutdown), start it again after 3 s',
    inject: async ({ pg }) => {
      await pg.crash();
      await sleep(3000);
      await pg.start();
    },
  },
  {
    name: 'partition',
    what: 'cut one NATS node off the network (routes and clients) for 15 s',
    needs: 'netns',
    inject: async ({ netns, system, note }) => {
      note(`partitioned n3 (leader of INVOCATIONS: ${await system.nats.leaderOf(streamName(system, 'INVOCATIONS')).catch(() => '?')})`);
      netns.partition();
      await sleep(15_000);
      netns.heal();
    },
  },
  {
    name: 'clock',
    what: 'jump the wall clock of one runner 10 min ahead for 10 s, then back',
    needs: 'clock',
    inject: async ({ clock }) => {
      clock.set(600);
      await sleep(10_000);
      clock.set(0);
    },
  },
];

function streamName(system, base) {
  const prefix = system.env.NATS_PREFIX;
  return prefix ? `${prefix}_${base}` : base;
}

/** Makes one node lead both INVOCATIONS and EMITS when a few leader step-downs get there; returns the leaders. */
async function alignLeaders(system) {
  const { connect } = require('nats');
  const inv = streamName(system, 'INVOCATIONS');
  const emits = streamName(system, 'EMITS');
  const nc = await connect({ servers: system.nats.url.split(','), user: system.nats.admin.user, pass: system.nats.admin.password });
  try {
    for (let i = 0; i < 8; i++) {
      const [a, b] = [await system.nats.leaderOf(inv), await system.nats.leaderOf(emits)];
      if (a && a === b) break;
      await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${emits}`, undefined, { timeout: 5000 }).catch(() => undefined);
      await sleep(1500);
    }
  } finally {
    await nc.close();
  }
  return { invocations: await system.nats.leaderOf(inv), emits: await system.nats.leaderOf(emits) };
}

async function killApp(system, name, note) {
  const pid = system.supervisor.pid(name);
  note(`killed ${name} (pid ${pid})`);
  process.kill(pid, 'SIGKILL');
  // The supervisor starts it again; the phase goes on until it is healthy.
  await new Promise((resolve) => {
    const onHealthy = (app) => {
      if (app !== name) return;
      system.supervisor.off('healthy', onHealthy);
      resolve();
    };
    system.supervisor.on('healthy', onHealthy);
  });
}

async function api(system, key, method, url, body) {
  const res = await fetch(`${system.baseUrl}${url}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** Markers of `phase` found in event_summaries. */
async function summaryMarkers(databaseUrl, phase) {
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query(`select event->>'m' as m from event_summaries where event->>'m' like $1`, [`f${phase}-%`]);
    return new Set(rows.map((r) => r.m));
  } finally {
    await c.end();
  }
}

function table(rows) {
  const head = ['fault', 'sent', 'acked', 'failed', 'in summaries', 'delivered', 'lost', 'duplicates', 'failed but delivered', 'max delay s', 'recovery s'];
  const lines = rows.map((r) => [r.name, r.sent, r.acked, r.failed, r.summaries, r.delivered, r.lost.length, r.duplicates, r.failedButDelivered, r.maxDelayS.toFixed(1), r.recoveryS.toFixed(1)]);
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...lines.map((l) => `| ${l.join(' | ')} |`)].join('\n');
}

/** What to stop, newest first; run on the way out, Ctrl-C included. */
const cleanups = [];
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    for (const c of cleanups) await c().catch((e) => log(`faults: cleanup: ${e.message}`));
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => cleanup().then(() => process.exit(130)));

async function main() {
  ensureBuilt(root);
  ensureBubblewrap();
  const wanted = process.argv.slice(2);
  const faults = wanted.length ? FAULTS.filter((f) => f.name === 'none' || wanted.includes(f.name)) : FAULTS;
  const unknown = wanted.filter((w) => !FAULTS.some((f) => f.name === w));
  if (unknown.length) throw new Error(`unknown fault ${unknown.join(', ')}; known: ${FAULTS.map((f) => f.name).join(', ')}`);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ess-faults-'));
  // As root, Postgres runs as the user postgres: it must be able to reach its directory inside.
  fs.chmodSync(dir, 0o711);
  const appLog = fs.createWriteStream(path.join(dir, 'apps.log'));
  let failed = false;
  try {
    const pg = await startOwnPostgres({ dir: path.join(dir, 'postgres'), port: await freePortFrom(25432) });
    cleanups.push(() => pg.stop());
    const { ensureDatabase } = require('./lib/infra');
    await ensureDatabase(pg.url('postgres'), 'faults');
    const databaseUrl = pg.url('faults');
    await require('../dist/libs/db/src/migrate.js').migrate(databaseUrl);

    const netns = createNetns('essflt');
    if (netns.unavailable) log(`faults: no partition fault: ${netns.unavailable}`);
    else cleanups.push(async () => netns.teardown());
    const clock = createClockOffset(path.join(dir, 'runner-2.faketime'));
    if (clock.unavailable) log(`faults: no clock fault: ${clock.unavailable}`);

    const natsNodes = netns.unavailable
      ? undefined
      : ({ clientPorts, clusterPorts, httpPorts }) =>
          // n1 and n2 on the host (routes on the host's end of the veth link), n3 inside the namespace.
          clientPorts.map((p, i) =>
            i < 2
              ? { name: `n${i + 1}`, host: '127.0.0.1', port: p, clusterHost: netns.hostIp, clusterPort: clusterPorts[i], httpPort: httpPorts[i] }
              : { name: 'n3', host: netns.nsIp, port: p, clusterHost: netns.nsIp, clusterPort: clusterPorts[i], httpPort: httpPorts[i], netns: netns.name },
          );
    const system = await startClusterSystem({
      dataDir: dir,
      databaseUrl,
      base: 30_000 + Math.floor(Math.random() * 20) * 1000,
      env: { LOG_LEVEL: 'warn', HTTP_RATE_PER_SEC: '0', EVENT_RETENTION: '1000000', NATS_PREFIX: '' },
      appEnv: clock.unavailable ? {} : { 'runner-2': clock.env },
      log: (m) => appLog.write(`${new Date().toISOString()} ${m}\n`),
      output: appLog,
      natsNodes,
    });
    cleanups.unshift(() => system.stop());
    await system.waitHealthy();
    log(`faults: system up (${system.nats.url}; apps' output in ${path.join(dir, 'apps.log')})`);

    const { runAdmin } = require('../dist/apps/api/src/admin/admin-cli.js');
    const user = await runAdmin(['users', 'create', '--username', 'faults', '--email', 'faults@localhost'], databaseUrl);
    const receiver = await startReceiver();
    cleanups.unshift(() => receiver.close());
    const endpoints = [];
    for (let i = 0; i < SOURCES; i++) {
      const src = await api(system, user.api_key, 'POST', '/sources', { component_code: HTTP_SOURCE, name: `fault-${i}` });
      const wh = await api(system, user.api_key, 'POST', `/webhooks?url=${encodeURIComponent(`${receiver.url}?s=${i}`)}`);
      await api(system, user.api_key, 'POST', '/subscriptions', { emitter_id: src.id, listener_id: wh.id });
      endpoints.push(src.configured_props.http.endpoint_url.replace(system.publicUrl, system.origin));
    }
    // Warm-up: every source deployed and delivering before the first phase.
    const warm = startLoad({ endpoints, rate: SOURCES, phase: 0 });
    await sleep(3000);
    await warm.stop();
    const deadline = Date.now() + 120_000;
    while (warm.requests.some((r) => r.status === 200 && !receiver.receipts.has(r.marker))) {
      if (Date.now() > deadline) throw new Error('the sources did not deliver their first events within 120 s');
      await sleep(500);
    }
    log(`faults: ${SOURCES} sources deployed and delivering; ${RATE} requests/s; ${PHASE_MS / 1000} s per phase`);

    const results = [];
    for (const [i, fault] of faults.entries()) {
      const phase = i + 1;
      if (fault.needs === 'netns' && netns.unavailable) {
        results.push({ name: fault.name, skipped: netns.unavailable });
        continue;
      }
      if (fault.needs === 'clock' && clock.unavailable) {
        results.push({ name: fault.name, skipped: clock.unavailable });
        continue;
      }
      // Each phase starts on a settled cluster, so that what a phase shows is its own fault's, not the last one's
      // leader elections and catch-up.
      const settleStarted = Date.now();
      const unsettled = await system.nats.settled();
      const waitedS = (Date.now() - settleStarted) / 1000;
      if (unsettled.length) log(`faults: before ${fault.name}: streams still unsettled after ${waitedS.toFixed(0)} s: ${unsettled.join(', ')}`);
      else if (waitedS > 1) log(`faults: before ${fault.name}: NATS settled in ${waitedS.toFixed(1)} s`);
      const notes = [];
      const note = (m) => notes.push(m);
      const load = startLoad({ endpoints, rate: RATE, phase });
      await sleep(BEFORE_MS);
      const faultAt = Date.now();
      const injected = fault.inject({ system, pg, netns, clock, note });
      await Promise.all([injected, sleep(PHASE_MS - BEFORE_MS)]);
      await load.stop();
      // Drain: everything acknowledged reaches the receiver (redeliveries wait out their ack wait).
      const acked = load.requests.filter((r) => r.status >= 200 && r.status < 300);
      const drainDeadline = Date.now() + DRAIN_MS;
      while (acked.some((r) => !receiver.receipts.has(r.marker)) && Date.now() < drainDeadline) await sleep(500);
      await sleep(2000);
      const summaries = await summaryMarkers(databaseUrl, phase);
      // "Late" is measured against the baseline: later than its longest delay plus a second (at least 2 s).
      const lateMs = Math.max(2000, (results.find((r) => r.name === 'none')?.maxDelayS ?? 0) * 1000 + 1000);
      const figures = { name: fault.name, what: fault.what, notes, ...phaseFigures({ requests: load.requests, receipts: receiver.receipts, summaries, faultAt: fault.name === 'none' ? 0 : faultAt, lateMs }) };
      results.push(figures);
      log(`faults: ${fault.name}: acked ${figures.acked}/${figures.sent}, delivered ${figures.delivered}, lost ${figures.lost.length}, duplicates ${figures.duplicates}, in summaries ${figures.summaries}, recovery ${figures.recoveryS.toFixed(1)} s${notes.length ? ` (${notes.join('; ')})` : ''}${figures.failed ? `; failed statuses ${figures.failedStatuses.join(',')}` : ''}`);
      if (figures.lost.length || figures.summaries < figures.acked) {
        failed = true;
        log(`faults: ${fault.name}: LOST ${figures.lost.length} acknowledged events (${figures.lost.slice(0, 10).join(', ')}), ${figures.acked - figures.summaries} missing from summaries`);
      }
    }
    const ran = results.filter((r) => !r.skipped);
    process.stdout.write(`\n${table(ran)}\n\n`);
    for (const r of results) process.stdout.write(`- ${r.name}: ${r.skipped ? `skipped: ${r.skipped}` : `${r.what}${r.notes.length ? ` (${r.notes.join('; ')})` : ''}`}\n`);
    process.stdout.write(`\n${SOURCES} sources, ${RATE} requests/s, ${PHASE_MS / 1000} s per phase (fault after ${BEFORE_MS / 1000} s); nats-server ${natsVersion()}\n`);
    if (results.some((r) => r.skipped) && process.env.FAULTS_REQUIRE_ALL === 'true') failed = true;
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    await cleanup();
    appLog.end();
    if (!failed && process.env.FAULTS_KEEP !== 'true') fs.rmSync(dir, { recursive: true, force: true });
    else log(`faults: kept ${dir} (apps.log, NATS logs)`);
  }
  process.exit(failed ? 1 : 0);
}

function natsVersion() {
  const { findNatsServer } = require('./lib/nats-auth');
  const r = require('node:child_process').spawnSync(findNatsServer(), ['--version'], { encoding: 'utf8' });
  return (r.stdout || '').trim().replace(/^nats-server: /, '');
}

main().catch((e) => {
  log(`npm run test:faults: ${e.stack || e.message}`);
  process.exit(1);
});
