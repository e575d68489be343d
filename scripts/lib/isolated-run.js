'use strict';
// One isolated run of tests or benchmarks: its own Postgres template database
// (migrated) and a NATS prefix, handed to the child processes as TEST_* variables;
// `finish()` drops every database and NATS stream named after the run.
const path = require('node:path');
const { resolvePostgres, resolveNats, dropDatabase, log } = require('./infra');

async function startIsolatedRun(root, runId) {
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(root, '.data'));
  const template = `ess_test_${runId}`;
  const pg = await resolvePostgres({ dataDir, dbName: template });
  const nats = await resolveNats({ dataDir });
  await dropStaleRunStreams(nats.url).catch((e) => log(`stale test streams: ${e.message}`));
  const { migrate } = require(path.join(root, 'dist/libs/db/src/migrate.js'));
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
  const finish = async () => {
    await cleanup(env).catch((e) => log(`cleanup: ${e.message}`));
    await pg.stop();
    await nats.stop();
  };
  return { env, finish };
}

/** Drops the run's databases and NATS streams (KV buckets and object stores are streams too). */
async function cleanup(env) {
  const { Client } = require('pg');
  const admin = new Client({ connectionString: env.TEST_PG_ADMIN_URL });
  await admin.connect();
  const { rows } = await admin.query('select datname from pg_database where datname like $1', [`ess_t%_${env.TEST_RUN_ID}%`]);
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

/** Streams of earlier runs that were killed before their cleanup (JetStream keeps reserving their storage). */
const STALE_RUN_MS = 6 * 3600 * 1000;
async function dropStaleRunStreams(natsUrl) {
  const { connect } = require('nats');
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    for await (const s of jsm.streams.list()) {
      const runStream = /^(t_|(KV|OBJ)_(t|bench)_|bench_)/.test(s.config.name);
      if (runStream && Date.now() - Date.parse(s.created) > STALE_RUN_MS) await jsm.streams.delete(s.config.name);
    }
  } finally {
    await nc.close();
  }
}

module.exports = { startIsolatedRun };
