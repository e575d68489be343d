'use strict';
// Finds (or starts) the Postgres and NATS servers the system needs, the same way
// for `npm start`, the admin CLI and the tests:
//   Postgres: DATABASE_URL → a server on 127.0.0.1:5432 → an embedded Postgres under DATA_DIR (./embedded-postgres)
//   NATS:     NATS_URL (the operator gives each app its credentials) → its own nats-server from PATH
//             (installed with apt-get when missing and run as root), with generated per-app users
const net = require('node:net');
const path = require('node:path');
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');
const { embeddedPostgres } = require('./embedded-postgres');
const { claimDatabase } = require('./database-claim');

const log = (msg) => process.stderr.write(`${msg}\n`);

/**
 * Exits once what this process wrote to stdout and stderr has reached their readers (at most 5 s): on a pipe whose
 * reader is slow the writes wait in memory, and process.exit drops them (the apps' last lines, copied through here).
 */
function exitAfterOutput(code) {
  let open = 2;
  const done = () => --open === 0 && process.exit(code);
  process.stdout.write('', done);
  process.stderr.write('', done);
  setTimeout(() => process.exit(code), 5000);
}

function portAnswers(port, host = '127.0.0.1', timeoutMs = 700) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function ensureDatabase(adminUrl, name) {
  const { Client } = require('pg');
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    // Made at the same moment by another start (npm start and the admin CLI at once): theirs is as good.
    if (!rowCount) await client.query(`create database "${name.replace(/"/g, '')}"`).catch((e) => {
      if (e.code !== '42P04' && e.code !== '23505') throw e;
    });
  } finally {
    await client.end();
  }
}

async function dropDatabase(adminUrl, name) {
  const { Client } = require('pg');
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists "${name.replace(/"/g, '')}" with (force)`);
  } finally {
    await client.end();
  }
}

const EMBEDDED_PG_PORT = 54329;

/**
 * Resolves a Postgres URL for database `dbName`. Returns `{ url, adminUrl, stop }`;
 * `stop` shuts down an embedded server this call started or found left running in `dataDir` (no-op otherwise).
 * Without DATABASE_URL the database is `dataDir`'s (`claim`, scripts/lib/database-claim.js): one claimed by another
 * DATA_DIR is left to it, and this one gets `<dbName>_<its id>`. `localPort` and `embeddedPort` are for tests.
 */
async function resolvePostgres({ dataDir, dbName = 'event_source_service', env = process.env, localPort = 5432, embeddedPort = EMBEDDED_PG_PORT, claim = true }) {
  if (env.DATABASE_URL) {
    return { url: env.DATABASE_URL, adminUrl: undefined, stop: async () => {}, how: 'DATABASE_URL' };
  }
  /** The database of this DATA_DIR on the server of `adminUrl`, and what to add to `how` about it. */
  const database = async (adminUrl, urlOf) => {
    await ensureDatabase(adminUrl, dbName);
    if (!claim) return { name: dbName, said: '' };
    const { name, note } = await claimDatabase({ adminUrl, name: dbName, dataDir, env, ensureDatabase, urlOf });
    return { name, said: note ? `, database ${name} (${note})` : '' };
  };
  if (await portAnswers(localPort)) {
    const adminUrl = `postgresql://postgres@127.0.0.1:${localPort}/postgres`;
    const urlOf = (name) => `postgresql://postgres@127.0.0.1:${localPort}/${name}`;
    let db;
    try {
      db = await database(adminUrl, urlOf);
    } catch (e) {
      throw new Error(`a Postgres server answers on 127.0.0.1:${localPort} but database "${dbName}" could not be created or claimed as user postgres (${e.message}); set DATABASE_URL`);
    }
    return { url: urlOf(db.name), adminUrl, stop: async () => {}, how: `local server on 127.0.0.1:${localPort}${db.said}` };
  }
  const dir = path.join(dataDir, 'postgres');
  const server = await embeddedPostgres({ dir, port: embeddedPort });
  const adminUrl = server.url('postgres');
  const urlOf = (name) => server.url(name);
  const stop = async () => server.stop();
  if (await server.running()) {
    const db = await database(adminUrl, urlOf);
    return { url: urlOf(db.name), adminUrl, stop, how: `embedded Postgres on ${embeddedPort} (${dir}), left running by an earlier start${db.said}` };
  }
  if (await portAnswers(embeddedPort)) {
    const db = await database(adminUrl, urlOf);
    return { url: urlOf(db.name), adminUrl, stop: async () => {}, how: `embedded Postgres already running on ${embeddedPort}${db.said}` };
  }
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) log(`initialising embedded Postgres in ${dir}`);
  await server.start();
  const db = await database(adminUrl, urlOf);
  return { url: urlOf(db.name), adminUrl, stop, how: `embedded Postgres on ${embeddedPort} (${dir}; log: ${path.join(dir, 'server.log')})${db.said}` };
}

const NATS_HELP = [
  'no nats-server found: NATS_URL is unset and nats-server is not on PATH.',
  'Get one with any of:',
  '  apt-get install nats-server      (Debian/Ubuntu; npm start does this itself when run as root)',
  '  brew install nats-server         (macOS)',
  'or set NATS_URL to an existing server with JetStream, and NATS_USER / NATS_PASSWORD (see docs/operations.md).',
].join('\n');

/**
 * Resolves the NATS server. Returns `{ url, stop, how, appEnv(app) }`: `appEnv` is
 * what one app (api, runner, delivery) needs to connect as its own user.
 *
 * With NATS_URL set, the operator's server and credentials are used: NATS_USER /
 * NATS_PASSWORD for every app, or per app NATS_<APP>_USER / NATS_<APP>_PASSWORD
 * (e.g. NATS_RUNNER_USER) and NATS_<APP>_INBOX_PREFIX. Otherwise a nats-server of our own is started with
 * the users and passwords of `<DATA_DIR>/nats/credentials.json` (generated on
 * first use), listening on 127.0.0.1:4222, or the next free port when that one
 * is taken; its store, config and log are in `<DATA_DIR>/nats`.
 */
async function resolveNats({ dataDir, env = process.env }) {
  if (env.NATS_URL) {
    const appEnv = (app) => {
      const key = app.toUpperCase();
      const out = {};
      if (env[`NATS_${key}_USER`]) Object.assign(out, { NATS_USER: env[`NATS_${key}_USER`], NATS_PASSWORD: env[`NATS_${key}_PASSWORD`] || '' });
      if (env[`NATS_${key}_INBOX_PREFIX`]) out.NATS_INBOX_PREFIX = env[`NATS_${key}_INBOX_PREFIX`];
      return out;
    };
    return { url: env.NATS_URL, stop: async () => {}, how: 'NATS_URL', appEnv };
  }
  const { ensureNatsServer, loadOrCreateCredentials, startNatsServer, freePortFrom, appEnv } = require('./nats-auth');
  const bin = ensureNatsServer();
  if (!bin) throw new Error(NATS_HELP);
  const dir = path.join(dataDir, 'nats');
  const creds = loadOrCreateCredentials(dir, env.NATS_PREFIX || '');
  const port = await freePortFrom(4222);
  if (port !== 4222) log(`nats: 127.0.0.1:4222 is taken; our nats-server listens on 127.0.0.1:${port}`);
  const server = await startNatsServer({ bin, dir, port, installations: [{ prefix: creds.prefix, credentials: creds.apps }], admin: creds.admin });
  return {
    url: server.url,
    stop: server.stop,
    how: `nats-server ${bin} on ${server.url} with per-app users (credentials: ${creds.file}; config: ${server.configFile}; log: ${server.logFile})`,
    appEnv: (app) => appEnv(creds.apps, app),
  };
}

/** Installs dependencies when missing and builds when any source is newer than the build. */
function ensureBuilt(root, { quiet = false } = {}) {
  const stdio = quiet ? ['ignore', process.stderr, process.stderr] : 'inherit';
  if (!fs.existsSync(path.join(root, 'node_modules', '.package-lock.json'))) {
    log('installing dependencies (npm ci)…');
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio });
    if (r.status !== 0) throw new Error('npm ci failed');
  }
  // The apps' stamp is their entry point; the dashboard's (apps/web, built by the same `npm run build`) its index.html.
  const stamps = [path.join(root, 'dist', 'apps', 'api', 'main.js'), path.join(root, 'dist', 'web', 'index.html')];
  const built = Math.min(...stamps.map((s) => (fs.existsSync(s) ? fs.statSync(s).mtimeMs : 0)));
  if (!built || newestMtime(root, ['apps', 'libs']) > built) {
    log('building…');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio });
    if (r.status !== 0) throw new Error('build failed');
  }
}

function newestMtime(root, dirs) {
  let newest = 0;
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (/\.(ts|tsx|css|html)$/.test(entry.name)) newest = Math.max(newest, fs.statSync(p).mtimeMs);
    }
  };
  for (const d of dirs) if (fs.existsSync(path.join(root, d))) walk(path.join(root, d));
  return newest;
}

module.exports = { resolvePostgres, resolveNats, ensureBuilt, ensureDatabase, dropDatabase, portAnswers, waitFor, log, exitAfterOutput };
