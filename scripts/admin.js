#!/usr/bin/env node
'use strict';
// Operator CLI: `npm run --silent admin -- users create --username u --email e`.
// Resolves the database exactly as `npm start` does; prints one JSON line on stdout.
const path = require('node:path');
const { resolvePostgres, ensureBuilt } = require('./lib/infra');

const root = path.join(__dirname, '..');

async function main() {
  ensureBuilt(root, { quiet: true });
  const dataDir = path.resolve(process.env.DATA_DIR || path.join(root, '.data'));
  const pg = await resolvePostgres({ dataDir });
  process.env.DATABASE_URL = pg.url;
  process.env.DATA_DIR = dataDir;
  let code = 0;
  try {
    const { migrate } = require('../dist/libs/db/src/migrate.js');
    await migrate(pg.url);
    const { runAdmin, UsageError } = require('../dist/apps/api/src/admin/admin-cli.js');
    try {
      const result = await runAdmin(process.argv.slice(2), pg.url);
      process.stdout.write(JSON.stringify(result) + '\n');
    } catch (e) {
      process.stderr.write(`error: ${e.message}\n`);
      code = e instanceof UsageError ? 64 : 1;
    }
  } finally {
    await pg.stop();
  }
  process.exit(code);
}

main().catch((e) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(1);
});
