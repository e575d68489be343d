'use strict';
// Boots the real apps for a benchmark (JS twin of test/support/system.ts): its
// own database cloned from the run's template and its own NATS prefix.
const { spawn, spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { createServer } = require('node:net');
const path = require('node:path');
const { Client } = require('pg');

const ROOT = path.join(__dirname, '..', '..');
const { addTestInstallation } = require(path.join(ROOT, 'scripts', 'lib', 'nats-auth'));
const { cpuSeconds, pidsMatching, processTree } = require('./proc-stats');
const need = (name) => {
  if (!process.env[name]) throw new Error(`${name} is not set: run benchmarks with npm run bench`);
  return process.env[name];
};

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitHealthy(url, proc, name, logs) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited:\n${logs().slice(-3000)}`);
    const res = await fetch(url).catch(() => undefined);
    if (res && res.ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${name}\n${logs().slice(-3000)}`);
}

/** Adds the per-app NATS users of an installation (NATS_PREFIX) to the run's server. */
function addNatsInstallation(prefix) {
  return addTestInstallation({ dir: need('TEST_NATS_AUTH_DIR'), pid: Number(need('TEST_NATS_PID')), url: need('TEST_NATS_URL'), prefix });
}

/** Connection options of the run's NATS admin user (benchmarks that publish or inspect streams themselves). */
function natsAdmin() {
  return { servers: need('TEST_NATS_URL'), user: need('TEST_NATS_USER'), pass: need('TEST_NATS_PASSWORD') };
}

async function startSystem(env = {}, { apps = ['api', 'runner', 'delivery'] } = {}) {
  const dbName = `ess_t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: need('TEST_PG_ADMIN_URL') });
  await admin.connect();
  await admin.query(`create database "${dbName}" template "${need('TEST_TEMPLATE_DB')}"`);
  await admin.end();
  const port = await freePort();
  const natsPrefix = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  const nats = await addNatsInstallation(natsPrefix);
  const baseEnv = {
    PATH: process.env.PATH || '',
    HOME: process.env.HOME || '/tmp',
    DATABASE_URL: need('TEST_DATABASE_URL').replace(/\/[^/?]+(\?|$)/, `/${dbName}$1`),
    NATS_URL: need('TEST_NATS_URL'),
    NATS_PREFIX: natsPrefix,
    DATA_DIR: process.env.TEST_DATA_DIR || path.join(ROOT, '.data', 'test'),
    SECRETS_KEY: randomBytes(32).toString('hex'),
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ALLOW_LOOPBACK: 'true',
    LOG_LEVEL: 'warn',
    // BENCH_ISOLATION=none measures the in-process pool (SANDBOX_ISOLATION=none) for comparison.
    ...(process.env.BENCH_ISOLATION ? { SANDBOX_ISOLATION: process.env.BENCH_ISOLATION } : {}),
    // BENCH_RUN_IN=workers measures runs on worker threads inside each sandbox process (SANDBOX_RUN_IN=workers).
    ...(process.env.BENCH_RUN_IN ? { SANDBOX_RUN_IN: process.env.BENCH_RUN_IN } : {}),
    ...env,
    // BENCH_APP_ENV="NAME=value …" sets any of the apps' settings, for an A/B (e.g. WEBHOOK_CONCURRENCY=32).
    ...Object.fromEntries(String(process.env.BENCH_APP_ENV || '').split(' ').filter((kv) => kv.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
  };
  const procs = new Map();
  const output = new Map();
  const origin = `http://127.0.0.1:${port}`;
  const system = {
    origin,
    baseUrl: `${origin}/v1`,
    env: baseEnv,
    natsPrefix,
    nats,
    ports: {},
    async startApp(app, name, extraEnv = {}, nodeArgs = []) {
      const own = nats[app];
      const appEnv = { ...baseEnv, NATS_USER: own.user, NATS_PASSWORD: own.password, NATS_INBOX_PREFIX: own.inboxPrefix, ...extraEnv };
      const opsVar = app === 'runner' ? 'RUNNER_METRICS_PORT' : app === 'delivery' ? 'DELIVERY_METRICS_PORT' : undefined;
      if (opsVar && (!appEnv[opsVar] || appEnv[opsVar] === '0')) appEnv[opsVar] = String(await freePort());
      const proc = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'dist', 'apps', app, 'main.js')], { env: appEnv, stdio: ['ignore', 'pipe', 'pipe'] });
      const lines = [];
      output.set(name, lines);
      const keep = (d) => {
        lines.push(d.toString());
        if (lines.length > 2000) lines.splice(0, 1000);
      };
      proc.stdout.on('data', keep);
      proc.stderr.on('data', keep);
      procs.set(name, proc);
      const logs = () => lines.join('');
      if (opsVar) system.ports[name] = Number(appEnv[opsVar]);
      await waitHealthy(opsVar ? `http://127.0.0.1:${appEnv[opsVar]}/healthz` : `${origin}/healthz`, proc, name, logs);
      return proc;
    },
    async stopApp(name, signal = 'SIGTERM') {
      const proc = procs.get(name);
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      await new Promise((resolve) => {
        const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        proc.kill(signal);
      });
    },
    pid: (name) => procs.get(name)?.pid,
    logs: (name) => (output.get(name) || []).join(''),
    async stop() {
      await Promise.all([...procs.keys()].map((n) => system.stopApp(n)));
    },
  };
  // BENCH_PROFILE_APP=api,runner,delivery (any of them): CPU profiles of those apps into BENCH_PROFILE_DIR (/tmp/prof),
  // or, with BENCH_PERF=1, the JIT symbol maps `perf record` needs (--perf-basic-prof, in /tmp).
  // BENCH_NODE_ARGS: node flags for every app (e.g. "--max-semi-space-size=64", to compare V8 settings).
  const profiled = new Set(String(process.env.BENCH_PROFILE_APP || '').split(',').map((s) => s.trim()).filter(Boolean));
  const profileArgs = process.env.BENCH_PERF === '1' ? ['--perf-basic-prof'] : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR || '/tmp/prof'}`];
  const nodeArgs = String(process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean);
  try {
    for (const app of apps) await system.startApp(app, app, {}, [...nodeArgs, ...(profiled.has(app) ? profileArgs : [])]);
  } catch (e) {
    await system.stop();
    throw e;
  }
  return system;
}

/** A paid user of the system; `suffix` tells apart users created within the same millisecond. */
function createUser(system, suffix = '') {
  const username = `bench${Date.now() % 1e8}${suffix}`;
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'admin.js'), 'users', 'create', '--username', username, '--email', `${username}@example.com`, '--plan', 'paid'], {
    env: { ...process.env, DATABASE_URL: system.env.DATABASE_URL, DATA_DIR: system.env.DATA_DIR },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`admin users create failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  return { id: out.id, apiKey: out.api_key };
}

/** A source of `ownerId` written straight into the system's database (no component runs it: its events are published to EMITS by the bench). */
async function insertSource(system, ownerId) {
  const db = new Client({ connectionString: system.env.DATABASE_URL });
  await db.connect();
  try {
    const src = require(path.join(ROOT, 'dist/libs/contracts/src')).newId('source');
    const now = Date.now();
    await db.query(`insert into sources (id, owner_id, user_id, component_id, name, name_slug, configured_props, active, rev, published_rev, created_at_ms, created_at, updated_at)
      values ($1, $2, $2, 'sc_bench', $3, $3, '{}', true, 1, 0, $4, $5, $5)`, [src, ownerId, `src-${src.slice(3, 12)}`, now, Math.floor(now / 1000)]);
    return src;
  } finally {
    await db.end();
  }
}

function api(system, apiKey) {
  const call = async (method, p, body) => {
    const res = await fetch(system.baseUrl + p, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  return { get: (p) => call('GET', p), post: (p, b) => call('POST', p, b), put: (p, b) => call('PUT', p, b), del: (p) => call('DELETE', p) };
}

/**
 * Prometheus text → { name{labels}: value }. A scrape on a kept-alive connection the server closed at that
 * moment fails once ("other side closed"): it is tried up to three times.
 */
async function scrape(port, attempts = 3) {
  let text;
  try {
    text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  } catch (e) {
    if (attempts <= 1) throw e;
    await new Promise((r) => setTimeout(r, 250));
    return scrape(port, attempts - 1);
  }
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

/** Sum of every series of a metric (all label sets). */
function total(metrics, name) {
  let sum = 0;
  for (const [k, v] of Object.entries(metrics)) if (k === name || k.startsWith(`${name}{`)) sum += v;
  return sum;
}

/** A quantile from a Prometheus histogram's cumulative buckets (linear inside the bucket). */
function histogramQuantile(metrics, name, q) {
  const buckets = [];
  for (const [k, v] of Object.entries(metrics)) {
    const m = new RegExp(`^${name}_bucket\\{.*le="([^"]+)".*\\}$`).exec(k);
    if (m) buckets.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), count: v });
  }
  buckets.sort((a, b) => a.le - b.le);
  const n = buckets.length ? buckets[buckets.length - 1].count : 0;
  if (!n) return NaN;
  const rank = q * n;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe;
      return prevLe + ((rank - prevCount) / Math.max(1, b.count - prevCount)) * (b.le - prevLe);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function until(check, { timeoutMs = 120_000, intervalMs = 250, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Busy and total CPU ticks of the whole machine so far (all cores), from /proc/stat. */
function machineTicks() {
  const f = require('node:fs').readFileSync('/proc/stat', 'utf8');
  const v = f.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = v[3] + (v[4] || 0);
  const all = v.reduce((a, b) => a + b, 0);
  return { busy: all - idle, all };
}

/**
 * The servers a system uses, as functions giving their pids now: the run's nats-server (TEST_NATS_PID, else every
 * nats-server) and the system's own Postgres backends (their command line names its database).
 */
function systemServerPids(system) {
  const natsPid = Number(process.env.TEST_NATS_PID) || undefined;
  const dbName = new URL(system.env.DATABASE_URL).pathname.slice(1);
  return { 'nats-server': () => (natsPid ? [natsPid] : pidsMatching('nats-server')), postgres: () => pidsMatching(` ${dbName} `) };
}

/**
 * A CPU source for the processes `pidsNow` gives at each reading: the CPU seconds of every one seen at any reading so
 * far, summed. One that exited keeps its last reading, so the sum never goes back (a Postgres backend closed during a
 * row made that row's Postgres CPU negative).
 */
function cpuSecondsOf(pidsNow) {
  const seen = new Map();
  return () => {
    for (const pid of pidsNow()) {
      const c = cpuSeconds(pid);
      if (!Number.isNaN(c)) seen.set(pid, c);
    }
    let sum = 0;
    for (const c of seen.values()) sum += c;
    return sum;
  };
}

/** CPU seconds of a process and all its descendants alive now (an app with its sandbox processes). */
function cpuSecondsOfTree(pid) {
  return processTree(pid).reduce((sum, p) => sum + (cpuSeconds(p) || 0), 0);
}

/**
 * Starts a CPU account of named processes: `sources` maps a name to a function
 * returning that part's CPU seconds so far. `done(wallMs, count)` returns the
 * machine's busy share, each part's share of one core and its CPU time per item
 * (`perItemUs`), and a printable line.
 */
function cpuParts(sources) {
  const wall0 = Date.now();
  const m0 = machineTicks();
  const start = Object.fromEntries(Object.entries(sources).map(([k, f]) => [k, f()]));
  return {
    done(wallMs = Date.now() - wall0, count = 0) {
      const s = wallMs / 1000;
      const m1 = machineTicks();
      const parts = Object.entries(sources).map(([name, f]) => {
        const used = f() - start[name];
        return { name, share: used / s, perItemUs: count ? (used / count) * 1e6 : NaN };
      });
      const busy = (m1.busy - m0.busy) / Math.max(1, m1.all - m0.all);
      const fmt = (p) => `${p.name} ${Math.round(p.share * 100)}%${count ? ` (${Math.round(p.perItemUs)} µs/item)` : ''}`;
      return { busy, parts, line: `machine busy ${Math.round(busy * 100)}% of ${require('node:os').cpus().length} cores; ${parts.map(fmt).join(', ')} (one core = 100%)` };
    },
  };
}

/** The CPU parts of a running system: each app with its sandbox processes, the run's nats-server, this system's Postgres backends. */
function systemCpuSources(system, apps) {
  const servers = systemServerPids(system);
  return {
    ...Object.fromEntries(apps.map((a) => [a, () => cpuSecondsOfTree(system.pid(a))])),
    'nats-server': cpuSecondsOf(servers['nats-server']),
    postgres: cpuSecondsOf(servers.postgres),
  };
}

/** The bench process itself (load generator and receiver). */
const benchClientCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/**
 * Starts a CPU account: `done()` → "machine busy 85% of 2 cores; api 31%, …" for the named
 * app processes (with their sandboxes), NATS, this system's Postgres backends and this benchmark process (one core = 100%).
 */
function cpuAccount(system, apps) {
  const account = cpuParts({ ...systemCpuSources(system, apps), 'bench client': benchClientCpu });
  return { done: (wallMs, count) => account.done(wallMs, count).line };
}

module.exports = { addNatsInstallation, natsAdmin, cpuAccount, cpuParts, systemCpuSources, systemServerPids, benchClientCpu, cpuSeconds, cpuSecondsOfTree, startSystem, createUser, insertSource, api, scrape, total, histogramQuantile, percentile, until, freePort };
