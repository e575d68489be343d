#!/usr/bin/env node
'use strict';
// `npm start`: install if needed, build, find or start Postgres and NATS, migrate,
// make sure a demo account exists, then run api + runner + delivery in the
// foreground, restarting an app that dies. Ctrl-C stops everything this script started.
const path = require('node:path');
const fs = require('node:fs');
const { resolvePostgres, resolveNats, ensureBuilt, waitFor, log, exitAfterOutput } = require('./lib/infra');
const { demoAccount } = require('./lib/demo-account');
const { ensureBubblewrap } = require('./lib/bubblewrap');
const { Supervisor } = require('./lib/supervisor');
const { claimDataDir } = require('./lib/data-dir-lock');
const { listensOn } = require('./lib/port-owner');

const root = path.join(__dirname, '..');
const stops = [];
let stopping = false;
// An app that dies is restarted with backoff; an app that keeps failing at start stops everything.
const supervisor = new Supervisor({ log });
supervisor.on('fatal', () => shutdown(1));

async function healthy(url) {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

/** Health of the process `pid` itself: another one holding its port (a second instance) would answer for it. */
async function ownHealth(pid, port) {
  return Boolean(pid) && listensOn(pid, port) && (await healthy(`http://127.0.0.1:${port}/healthz`));
}

/** Starts an app under the supervisor, which restarts it when it dies (scripts/lib/supervisor.js); its health port. */
function startApp(app, env) {
  const { loadConfig } = require('../dist/libs/config/src/config.js');
  const c = loadConfig(env);
  const port = { api: c.port, runner: c.runnerMetricsPort, delivery: c.deliveryMetricsPort }[app];
  supervisor.add(app, { command: process.execPath, args: [path.join(root, 'dist', 'apps', app, 'main.js')], env, healthy: port ? (pid) => ownHealth(pid, port) : undefined });
  return port;
}

async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  log('stopping…');
  await supervisor.stop();
  for (const stop of stops.reverse()) await stop().catch((e) => log(`stop: ${e.message}`));
  exitAfterOutput(code);
}

/** `ip:port` of a Postgres URL's server (both loopback addresses for localhost), for SANDBOX_EGRESS_DENY. */
function postgresAddresses(url) {
  const u = new URL(url);
  const port = u.port || '5432';
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return [`127.0.0.1:${port}`, `[::1]:${port}`];
  return require('node:net').isIP(host) ? [host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`] : [];
}

/** The configuration as the apps will read it; undefined (the line written) when a value is wrong. */
function checkConfig(env) {
  const { loadConfig, ConfigError } = require('../dist/libs/config/src/config.js');
  try {
    return loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`configuration error: ${e.message}\n`);
    return undefined;
  }
}

async function main() {
  process.on('SIGINT', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  ensureBuilt(root);
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(root, '.data'));
  const port = process.env.PORT || '3000';
  const defaults = { DATA_DIR: dataDir, PORT: port, ALLOW_LOOPBACK: process.env.ALLOW_LOOPBACK || 'true' };
  // A wrong value stops it before it starts anything (Postgres, NATS, an app), as README "Configuration" says.
  if (!checkConfig({ ...process.env, ...defaults })) return shutdown(78);
  ensureBubblewrap();
  fs.mkdirSync(dataDir, { recursive: true });
  // Before anything else: a second npm start of this DATA_DIR would stop the running one's nats-server.
  stops.push(claimDataDir(dataDir));

  const pg = await resolvePostgres({ dataDir });
  stops.push(pg.stop);
  log(`postgres: ${pg.how}`);
  const nats = await resolveNats({ dataDir });
  stops.push(nats.stop);
  log(`nats: ${nats.how}`);

  const env = {
    ...process.env,
    ...defaults,
    DATABASE_URL: pg.url,
    NATS_URL: nats.url,
    // Loopback is open (local webhook receivers), but component code never reaches this Postgres.
    SANDBOX_EGRESS_DENY: [process.env.SANDBOX_EGRESS_DENY, ...postgresAddresses(pg.url)].filter(Boolean).join(','),
  };
  // Again with the URLs found or started above; a wrong one stops the Postgres and NATS started above too.
  const config = checkConfig(env);
  if (!config) return shutdown(78);
  const { migrate } = require('../dist/libs/db/src/migrate.js');
  const applied = await migrate(pg.url);
  if (applied.length) log(`migrations applied: ${applied.join(', ')}`);
  const account = await demoAccount(dataDir, pg.url);

  // Each app connects to NATS as its own user. The runner needs only NATS: it gets no Postgres credentials.
  const ports = {
    runner: startApp('runner', { ...env, ...nats.appEnv('runner'), DATABASE_URL: '' }),
    delivery: startApp('delivery', { ...env, ...nats.appEnv('delivery') }),
    api: startApp('api', { ...env, ...nats.appEnv('api') }),
  };
  for (const name of ['api', 'runner', 'delivery']) {
    // Longer than 5 failed starts take: the supervisor judges an app that cannot start (a port in use) first.
    if (ports[name]) await waitFor(() => ownHealth(supervisor.pid(name), ports[name]), 180_000, `${name} to become healthy`);
  }

  const base = `${config.publicUrl}/v1`;
  process.stdout.write(`ready ${base}\n`);
  process.stdout.write(`dashboard ${config.publicUrl}/ui/ (sign in with the API key below)\n`);
  process.stdout.write(`demo account ${account.id}, API key: ${account.api_key}\n`);
  process.stdout.write(`try: curl -s -H "Authorization: Bearer ${account.api_key}" ${base}/users/me\n`);
}

main().catch((e) => {
  log(`npm start: ${e.message}`);
  shutdown(1);
});
