#!/usr/bin/env node
'use strict';
// NATS credentials of an installation (see docs/operations.md, "NATS credentials"):
//
//   node scripts/nats-auth.js compose <dir>        docker compose's `nats-auth` job: keeps (or generates) the
//                                                   passwords in <dir>, writes <dir>/nats-server.conf, the
//                                                   `cluster` profile's <dir>/nats-{1,2,3}.conf and one
//                                                   <dir>/<app>.password per app (all mode 0600)
//   node scripts/nats-auth.js rotate [<dir>]        new passwords for every user in <dir> (default
//                                                   <DATA_DIR>/nats, where npm start keeps them); rewrites the
//                                                   compose files when <dir> holds them. Then reload nats-server
//                                                   (SIGHUP) and restart the apps.
//   node scripts/nats-auth.js show [<dir>]          prints the users and their passwords (JSON)
//
// NATS_PREFIX (same as the apps') scopes the permissions; docker compose passes it.
const fs = require('node:fs');
const path = require('node:path');
const { APPS, loadOrCreateCredentials, rotateCredentials, renderServerConfig, writePrivate } = require('./lib/nats-auth');
const { loadOrCreateRouteUser } = require('./lib/nats-cluster');
const { npmStartOf } = require('./lib/data-dir-lock');

const root = path.join(__dirname, '..');
const defaultDir = () => path.join(path.resolve(process.env.DATA_DIR || path.join(root, '.data')), 'nats');

/** The compose files: the server config (listening on every interface of the container, store on its volume) and each app's password file. */
function writeComposeFiles(dir, creds) {
  writePrivate(
    path.join(dir, 'nats-server.conf'),
    renderServerConfig({ listen: '0.0.0.0:4222', storeDir: '/data', httpPort: '127.0.0.1:8222', installations: [{ prefix: creds.prefix, credentials: creds.apps }], admin: creds.admin }),
  );
  // The `cluster` profile's three nodes: routes between them with the cluster's own user, every write
  // fsynced before it is acknowledged (sync_interval: always).
  const route = loadOrCreateRouteUser(dir);
  const nodes = ['nats-1', 'nats-2', 'nats-3'];
  for (const node of nodes) {
    writePrivate(
      path.join(dir, `${node}.conf`),
      renderServerConfig({
        listen: '0.0.0.0:4222',
        storeDir: '/data',
        httpPort: '127.0.0.1:8222',
        installations: [{ prefix: creds.prefix, credentials: creds.apps }],
        admin: creds.admin,
        serverName: node,
        syncInterval: 'always',
        cluster: { name: 'ess', listen: '0.0.0.0:6222', user: route.user, password: route.password, routes: nodes.filter((n) => n !== node).map((n) => `nats-route://${route.user}:${route.password}@${n}:6222`) },
      }),
    );
  }
  for (const app of APPS) writePrivate(path.join(dir, `${app}.password`), `${creds.apps[app].password}\n`);
  fs.writeFileSync(path.join(dir, 'compose'), 'this directory holds the docker compose NATS files\n');
}

function main() {
  const [cmd, dirArg] = process.argv.slice(2);
  const dir = path.resolve(dirArg || defaultDir());
  const prefix = process.env.NATS_PREFIX || '';
  switch (cmd) {
    case 'compose': {
      const creds = loadOrCreateCredentials(dir, prefix);
      writeComposeFiles(dir, creds);
      process.stdout.write(`nats-auth: users ${['admin', ...APPS.map((a) => creds.apps[a].user)].join(', ')} in ${dir}\n`);
      return;
    }
    case 'rotate': {
      if (!fs.existsSync(path.join(dir, 'credentials.json'))) throw new Error(`no credentials in ${dir}`);
      // Its server and apps keep the old passwords until it restarts, while apps joining it would take the new ones.
      const running = npmStartOf(path.dirname(dir));
      if (running) throw new Error(`npm start (pid ${running}) is running with these credentials: stop it first (Ctrl-C), rotate, then start it again`);
      const creds = rotateCredentials(dir);
      const compose = fs.existsSync(path.join(dir, 'compose'));
      if (compose) writeComposeFiles(dir, creds);
      const next = compose ? 'now reload nats-server (docker compose kill -s HUP nats) and restart the apps' : 'npm start uses them at its next start';
      process.stdout.write(`nats-auth: new passwords for every user in ${path.join(dir, 'credentials.json')}; ${next}\n`);
      return;
    }
    case 'show': {
      process.stdout.write(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
      return;
    }
    default:
      throw new Error('usage: node scripts/nats-auth.js compose <dir> | rotate [<dir>] | show [<dir>]');
  }
}

try {
  main();
} catch (e) {
  process.stderr.write(`nats-auth: ${e.message}\n`);
  process.exit(1);
}
