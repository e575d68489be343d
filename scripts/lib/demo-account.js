'use strict';
// The demo account `npm start` prints. Its key is kept in DATA_DIR so every start can
// print it; the account itself lives in the database, which may outlive DATA_DIR (a
// shared Postgres on 127.0.0.1:5432, a fresh clone, a deleted .data).
const path = require('node:path');
const fs = require('node:fs');
const { createHash } = require('node:crypto');

const USERNAME = 'demo';

/** Returns `{ id, api_key }` of the demo account, creating it or issuing it a new key as needed. */
async function demoAccount(dataDir, databaseUrl) {
  const file = path.join(dataDir, 'demo-account.json');
  const { runAdmin } = require('../../dist/apps/api/src/admin/admin-cli.js');
  const { Client } = require('pg');
  const saved = readSaved(file);
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  let userId;
  try {
    if (saved) {
      const hash = createHash('sha256').update(saved.api_key).digest('hex');
      const { rowCount } = await db.query('select 1 from api_keys where key_hash = $1 and revoked_at is null', [hash]);
      if (rowCount) return saved;
    }
    const { rows } = await db.query('select id from users where username = $1', [USERNAME]);
    userId = rows[0]?.id;
  } finally {
    await db.end();
  }
  // The account exists but its key is not in this DATA_DIR (or was rotated): issue a new one.
  const account = userId
    ? { id: userId, api_key: (await runAdmin(['keys', 'rotate', '--user', userId], databaseUrl)).api_key }
    : await runAdmin(['users', 'create', '--username', USERNAME, '--email', 'demo@localhost'], databaseUrl).then((u) => ({ id: u.id, api_key: u.api_key }));
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, JSON.stringify(account) + '\n', { mode: 0o600 });
  return account;
}

function readSaved(file) {
  try {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    return typeof saved?.api_key === 'string' && typeof saved?.id === 'string' ? saved : undefined;
  } catch {
    return undefined;
  }
}

module.exports = { demoAccount };
