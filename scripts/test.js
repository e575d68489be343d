#!/usr/bin/env node
'use strict';
// `npm test`: builds, gives this run its own Postgres template database and NATS
// prefix (so concurrent runs never collide), runs every jest test (unit,
// integration, end-to-end against the real services), then cleans up.
// Extra arguments go to jest: `npm test -- test/sources.e2e-spec.ts`.
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { resolvePostgres, resolveNats, ensureBuilt, dropDatabase, log } = require('./lib/infra');

const root = path.join(__dirname, '..');

async function main() {
  ensureBuilt(root);
  const runId = randomBytes(4).toString('hex');
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(root, '.data'));
  const template = `ess_test_${runId}`;
  const pg = await resolvePostgres({ dataDir, dbName: template });
  const nats = await resolveNats({ dataDir });
  const { migrate } = require('../dist/libs/db/src/migrate.js');
  await migrate(pg.url);
  const env = {
    ...process.env,
    TEST_RUN_ID: runId,
    TEST_DATABASE_URL: pg.url,
    TEST_PG_ADMIN_URL: pg.adminUrl || pg.url.replace(/\/[^/?]+(\?|$)/, '/postgres$1'),
    TEST_TEMPLATE_DB: template,
    TEST_NATS_URL: nats.url,
    TEST_DATA_DIR: path.join(dataDir, 'test'),
  };
  let status = 1;
  try {
    const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
    status = spawnSync(process.execPath, [jest, ...process.argv.slice(2)], { cwd: root, env, stdio: 'inherit' }).status ?? 1;
  } finally {
    await cleanup(env).catch((e) => log(`cleanup: ${e.message}`));
    await pg.stop();
    await nats.stop();
  }
  process.exit(status);
}

/** Drops this run's databases and NATS streams, buckets and object stores. */
async function cleanup(env) {
  const { Client } = require('pg');
  const admin = new Client({ connectionString: env.TEST_PG_ADMIN_URL });
  await admin.connect();
  const { rows } = await admin.query("select datname from pg_database where datname like $1", [`ess_t%_${env.TEST_RUN_ID}%`]);
  await admin.end();
  for (const r of rows) await dropDatabase(env.TEST_PG_ADMIN_URL, r.datname);
  const { connect } = require('nats');
  const nc = await connect({ servers: env.TEST_NATS_URL });
  const jsm = await nc.jetstreamManager();
  for await (const s of jsm.streams.list()) {
    if (s.config.name.includes(env.TEST_RUN_ID)) await jsm.streams.delete(s.config.name);
  }
  await nc.close();
}

main().catch((e) => {
  log(`npm test: ${e.message}`);
  process.exit(1);
});
