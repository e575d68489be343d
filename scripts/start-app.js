#!/usr/bin/env node
'use strict';
// `npm run start:api | start:runner | start:delivery`: one app of the service, for replicas and split deployments.
// With NATS_URL set it runs with the environment as given. Without it, beside a running `npm start` of the same
// DATA_DIR, the app joins that installation: npm start's own nats-server (its address from
// <DATA_DIR>/nats/nats-server.conf) as the app's own NATS user (<DATA_DIR>/nats/credentials.json), e.g.
//   RUNNER_METRICS_PORT=9474 npm run start:runner
const fs = require('node:fs');
const path = require('node:path');

const APPS = ['api', 'runner', 'delivery'];
const root = path.join(__dirname, '..');

/** npm start's nats-server of `dir` while it runs: its URL and the installation's credentials; else undefined. */
function runningNpmStartNats(dir) {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'nats-server.pid'), 'utf8').trim());
    process.kill(pid, 0);
    const conf = fs.readFileSync(path.join(dir, 'nats-server.conf'), 'utf8');
    const { listen } = JSON.parse(conf.slice(conf.indexOf('{')));
    const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
    return { url: `nats://${listen}`, creds };
  } catch {
    return undefined;
  }
}

function main() {
  const app = process.argv[2];
  if (!APPS.includes(app)) {
    process.stderr.write(`usage: node scripts/start-app.js ${APPS.join(' | ')}\n`);
    process.exit(64);
  }
  const env = process.env;
  if (!env.NATS_URL) {
    const dir = path.join(path.resolve(env.DATA_DIR || path.join(root, '.data')), 'nats');
    const joined = runningNpmStartNats(dir);
    if (joined) {
      const { appEnv } = require('./lib/nats-auth');
      Object.assign(env, { NATS_URL: joined.url, ...(env.NATS_USER ? {} : appEnv(joined.creds.apps, app)) });
      if (env.NATS_PREFIX === undefined && joined.creds.prefix) env.NATS_PREFIX = joined.creds.prefix;
      process.stderr.write(`${app}: joining npm start's installation: NATS ${joined.url} as user ${env.NATS_USER} (${dir})\n`);
    } else {
      // Not silently someone else's server: the default is whatever listens on this host's 4222.
      process.stderr.write(`${app}: no npm start runs with DATA_DIR ${path.dirname(dir)}; NATS_URL is unset: connecting to its default, nats://127.0.0.1:4222\n`);
    }
  }
  require(path.join(root, 'dist', 'apps', app, 'main.js'));
}

main();
