'use strict';
// One isolated run of tests or benchmarks: its own Postgres template database
// (migrated) and its own authenticated nats-server (free port, temporary store,
// generated config; every test system adds its per-app users to it), handed to
// the child processes as TEST_* variables; `finish()` drops every database named
// after the run, stops the server and reports permission violations it logged.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { resolvePostgres, dropDatabase, log } = require('./infra');
const { startTestNatsServer, permissionViolations } = require('./nats-auth');

/** Users of installations whose prefix holds this marker are refused on purpose (tests of the permissions). */
const PROBE_MARKER = '_probe_';

/**
 * `spareInstallations`: NATS users of that many test systems are in the server's config from the
 * start, so a system that claims them needs no reload (each reload makes JetStream answer "no
 * responders" for a moment, to every system of the run).
 */
async function startIsolatedRun(root, runId, { spareInstallations = 0 } = {}) {
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(root, '.data'));
  const template = `ess_test_${runId}`;
  const pg = await resolvePostgres({ dataDir, dbName: template, claim: false });
  const natsDir = fs.mkdtempSync(path.join(os.tmpdir(), `ess-nats-${runId}-`));
  let nats;
  try {
    const spares = Array.from({ length: spareInstallations }, () => `t_${runId}_${randomBytes(3).toString('hex')}`);
    nats = await startTestNatsServer({ dir: natsDir, spares });
  } catch (e) {
    fs.rmSync(natsDir, { recursive: true, force: true });
    throw e;
  }
  log(`nats: nats-server with authentication on ${nats.url} (${natsDir})`);
  const { migrate } = require(path.join(root, 'dist/libs/db/src/migrate.js'));
  await migrate(pg.url);
  const env = {
    ...process.env,
    TEST_RUN_ID: runId,
    TEST_DATABASE_URL: pg.url,
    TEST_PG_ADMIN_URL: pg.adminUrl || pg.url.replace(/\/[^/?]+(\?|$)/, '/postgres$1'),
    TEST_TEMPLATE_DB: template,
    TEST_NATS_URL: nats.url,
    TEST_NATS_USER: nats.admin.user,
    TEST_NATS_PASSWORD: nats.admin.password,
    TEST_NATS_AUTH_DIR: natsDir,
    TEST_NATS_PID: String(nats.pid),
    TEST_NATS_PROBE_MARKER: PROBE_MARKER,
    TEST_DATA_DIR: path.join(dataDir, 'test'),
  };
  /** Resolves to the permission violations of the apps (not of the probes): each is a subject an app needs and was refused. */
  const finish = async () => {
    await cleanup(env).catch((e) => log(`cleanup: ${e.message}`));
    await pg.stop();
    await nats.stop();
    const violations = permissionViolations(nats.logFile).filter((l) => !l.includes(PROBE_MARKER));
    if (violations.length) {
      const kept = path.join(dataDir, `nats-server-${runId}.log`);
      fs.mkdirSync(dataDir, { recursive: true });
      fs.copyFileSync(nats.logFile, kept);
      log(`nats-server refused ${violations.length} publish/subscribe of the apps (log kept in ${kept}):\n${violations.slice(0, 20).join('\n')}`);
    }
    fs.rmSync(natsDir, { recursive: true, force: true });
    return violations;
  };
  return { env, finish };
}

/** Drops the run's databases (the run's NATS server and its store go with it). */
async function cleanup(env) {
  const { Client } = require('pg');
  const admin = new Client({ connectionString: env.TEST_PG_ADMIN_URL });
  await admin.connect();
  const { rows } = await admin.query('select datname from pg_database where datname like $1', [`ess_t%_${env.TEST_RUN_ID}%`]);
  await admin.end();
  for (const r of rows) await dropDatabase(env.TEST_PG_ADMIN_URL, r.datname);
}

module.exports = { startIsolatedRun };
