#!/usr/bin/env node
'use strict';
// `npm run cluster`: the scaled-out system on one machine. Builds if needed, finds or starts Postgres
// (as npm start does; its own database, event_source_service_cluster), starts a three-node NATS
// JetStream cluster on loopback (routes between the nodes, the same per-app users as npm start,
// NATS_REPLICAS=3), migrates, makes sure a demo account exists, then runs two api replicas behind a
// round-robin on PORT (default 3000), two runners and two delivery replicas, restarting any that dies.
// Ctrl-C stops everything it started. Topology and ports: docs/operations.md, "Running a cluster".
const path = require('node:path');
const fs = require('node:fs');
const { resolvePostgres, ensureBuilt, log, exitAfterOutput } = require('./lib/infra');
const { demoAccount } = require('./lib/demo-account');
const { ensureBubblewrap } = require('./lib/bubblewrap');
const { startClusterSystem, CLUSTER_DB } = require('./lib/cluster-system');
const { claimDataDir } = require('./lib/data-dir-lock');

const root = path.join(__dirname, '..');
const stops = [];
let stopping = false;

async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  log('stopping…');
  for (const stop of stops.reverse()) await stop().catch((e) => log(`stop: ${e.message}`));
  exitAfterOutput(code);
}

async function main() {
  process.on('SIGINT', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  ensureBuilt(root);
  ensureBubblewrap();
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(root, '.data'), 'cluster');
  fs.mkdirSync(dataDir, { recursive: true });
  // A second cluster of this DATA_DIR would run its own NATS nodes on the same JetStream stores.
  stops.push(claimDataDir(dataDir, { file: 'npm-run-cluster.pid', dataDir: path.dirname(dataDir), hint: 'or give this one another DATA_DIR' }));

  const pg = await resolvePostgres({ dataDir, dbName: CLUSTER_DB });
  stops.push(pg.stop);
  log(`postgres: ${pg.how}`);
  const { migrate } = require('../dist/libs/db/src/migrate.js');
  const applied = await migrate(pg.url);
  if (applied.length) log(`migrations applied: ${applied.join(', ')}`);
  const account = await demoAccount(dataDir, pg.url);

  const port = process.env.PORT ? Number(process.env.PORT) : undefined;
  const system = await startClusterSystem({ dataDir, databaseUrl: pg.url, port, log });
  stops.push(() => system.stop());
  system.supervisor.on('fatal', () => shutdown(1));
  await system.waitHealthy();

  const base = `${system.publicUrl}/v1`;
  const lines = [
    `ready ${base} (round-robin over ${system.apps.filter((a) => a.app === 'api').map((a) => `api on :${a.port}`).join(', ')})`,
    `nats cluster: ${system.nats.url} (NATS_REPLICAS=3)`,
    `runners: ${system.apps.filter((a) => a.app === 'runner').map((a) => a.healthUrl).join(' ')}`,
    `delivery: ${system.apps.filter((a) => a.app === 'delivery').map((a) => a.healthUrl).join(' ')}`,
    `demo account ${account.id}, API key: ${account.api_key}`,
    `try: curl -s -H "Authorization: Bearer ${account.api_key}" ${base}/users/me`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((e) => {
  log(`npm run cluster: ${e.message}`);
  shutdown(1);
});
