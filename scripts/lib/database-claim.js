'use strict';
// Which DATA_DIR a database found on a Postgres server belongs to. `npm start`, the admin CLI and `npm run cluster`
// find Postgres without a DATABASE_URL on 127.0.0.1:5432 (or an embedded server on its fixed port), and so does every
// other DATA_DIR on the machine: two installations would read and write one database, each with its own NATS and
// secrets key (webhook secrets one cannot decrypt, sources the other's runners never see). A database is claimed by
// the first DATA_DIR that uses it (the claim is the database's comment, naming the DATA_DIR's id and path); another
// DATA_DIR uses a database of its own, `<name>_<its id>`, and says why.
const fs = require('node:fs');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

/** The file under DATA_DIR holding its id. */
const ID_FILE = 'database-claim';
const ID_PATTERN = /^[0-9a-f]{12}$/;
const COMMENT = /^event-source-service DATA_DIR ([0-9a-f]{12}) (.*)$/s;
/** pg_advisory_lock key held while a claim is read and written: two first starts at once claim one database once. */
const LOCK_KEY = 0x65737363; // "essc"

/** The id of `dataDir`, made on its first use (two processes at once agree on one). */
function dataDirId(dataDir) {
  const file = path.join(dataDir, ID_FILE);
  const read = () => {
    const id = fs.readFileSync(file, 'utf8').trim();
    if (!ID_PATTERN.test(id)) throw new Error(`${file} does not hold a DATA_DIR id (12 hex digits): remove it to make a new one`);
    return id;
  };
  try {
    return read();
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${randomBytes(6).toString('hex')}\n`, { flag: 'wx' });
  } catch (e) {
    if (e.code !== 'EEXIST') throw new Error(`cannot write ${file} (${e.message}): DATA_DIR must be writable`);
  }
  return read();
}

/** The DATA_DIR a database is claimed by (`{ id, dir }`), or undefined. */
async function claimOf(admin, name) {
  const { rows } = await admin.query(`select shobj_description(oid, 'pg_database') as comment from pg_database where datname = $1`, [name]);
  const m = COMMENT.exec(rows[0]?.comment ?? '');
  return m ? { id: m[1], dir: m[2] } : undefined;
}

const literal = (s) => `'${s.replace(/'/g, "''")}'`;

async function setClaim(admin, name, id, dataDir) {
  await admin.query(`comment on database "${name.replace(/"/g, '')}" is ${literal(`event-source-service DATA_DIR ${id} ${dataDir}`)}`);
}

/** Whether database `url` holds tables already (made by an installation before claims existed). */
async function holdsTables(url) {
  const { Client } = require('pg');
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(`select exists (select 1 from pg_tables where schemaname = 'public') as any`)).rows[0].any;
  } finally {
    await client.end();
  }
}

/**
 * The database `dataDir` uses on the server of `adminUrl` (a superuser's connection): `name` when it is unclaimed or
 * claimed by `dataDir`, else `<name>_<dataDir's id>`, created and claimed. An unclaimed database that already holds
 * tables (an installation from before claims) is claimed only by a DATA_DIR that has run before (its secrets key is
 * there, or SECRETS_KEY is set): a new DATA_DIR is not handed data it cannot decrypt. Returns `{ name, note }`, `note`
 * saying why another database was taken. `urlOf(db)` is the url of a database of that server.
 */
async function claimDatabase({ adminUrl, name, dataDir, env, ensureDatabase, urlOf }) {
  const dir = path.resolve(dataDir);
  const id = dataDirId(dir);
  const { Client } = require('pg');
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query('select pg_advisory_lock($1)', [LOCK_KEY]);
    const owner = await claimOf(admin, name);
    if (owner?.id === id) return { name };
    let note;
    if (owner) note = `database ${name} belongs to the DATA_DIR ${owner.dir}`;
    else if (!(await holdsTables(urlOf(name))) || fs.existsSync(path.join(dir, 'secrets.key')) || env.SECRETS_KEY) {
      await setClaim(admin, name, id, dir);
      return { name };
    } else note = `database ${name} holds the tables of an installation whose DATA_DIR is not known (this one is new)`;
    const own = `${name}_${id}`;
    await ensureDatabase(adminUrl, own);
    const ownOwner = await claimOf(admin, own);
    if (ownOwner && ownOwner.id !== id) throw new Error(`database ${own} belongs to the DATA_DIR ${ownOwner.dir}: remove ${path.join(dir, ID_FILE)} or set DATABASE_URL`);
    if (!ownOwner) await setClaim(admin, own, id, dir);
    return { name: own, note };
  } finally {
    await admin.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await admin.end();
  }
}

module.exports = { claimDatabase };
