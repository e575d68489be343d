#!/usr/bin/env node
'use strict';
// `npm run bench [-- <filter>…]`: builds, gives the run its own Postgres template
// database and NATS prefix (like `npm test`), then runs every benchmark file
// whose path contains one of the filters (all when none), one after the other:
// `bench/*.bench.js`, `apps/*/bench/*.bench.js`, and the compiled TypeScript
// ones, `dist/{apps,libs}/*/bench/*.bench.js`. Each prints its figures.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { resolvePostgres, resolveNats, ensureBuilt, dropDatabase, log } = require('./lib/infra');

const root = path.join(__dirname, '..');

function benchFiles() {
  const dirs = [path.join(root, 'bench')];
  const sub = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir).map((d) => path.join(dir, d, 'bench')) : []);
  dirs.push(...sub(path.join(root, 'apps')), ...sub(path.join(root, 'dist', 'apps')), ...sub(path.join(root, 'dist', 'libs')));
  const files = [];
  for (const d of dirs) {
    if (!fs.existsSync(d)) continue;
    for (const f of fs.readdirSync(d).sort()) if (f.endsWith('.bench.js')) files.push(path.join(d, f));
  }
  return files;
}

async function main() {
  const filters = process.argv.slice(2);
  const files = benchFiles().filter((f) => !filters.length || filters.some((x) => path.relative(root, f).includes(x)));
  if (!files.length) {
    log(`no benchmark matches ${filters.join(' ') || '(any)'}`);
    process.exit(1);
  }
  ensureBuilt(root);
  const runId = `b${randomBytes(3).toString('hex')}`;
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
  let failed = 0;
  try {
    for (const file of files) {
      log(`bench: ${path.relative(root, file)}`);
      const r = spawnSync(process.execPath, ['--expose-gc', file], { cwd: root, env, stdio: 'inherit' });
      if (r.status !== 0) failed++;
    }
  } finally {
    await cleanup(env).catch((e) => log(`cleanup: ${e.message}`));
    await pg.stop();
    await nats.stop();
  }
  process.exit(failed ? 1 : 0);
}

/** Drops this run's databases and NATS streams (KV buckets and object stores are streams too). */
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

main().catch((e) => {
  log(`npm run bench: ${e.message}`);
  process.exit(1);
});
