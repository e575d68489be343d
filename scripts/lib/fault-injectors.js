'use strict';
// How the fault suite breaks things it cannot break with kill -9:
// - a network partition of one NATS node: the node runs in its own network namespace, joined to the
//   host by a veth pair; the partition takes the host's end of the link down (every packet to and from
//   the node is lost: routes to the other nodes and the apps' connections alike), and brings it up again.
//   Needs root (CAP_NET_ADMIN) and iproute2; without them the partition is skipped and said so.
// - a clock jump on one runner: the runner runs under libfaketime (Debian's `faketime` package) with
//   its offset read from a file the suite rewrites; only the wall clock moves (CLOCK_REALTIME: Date.now(),
//   new Date()), the monotonic clock that timers run on does not, as with an NTP step or a VM resume.
//   Without libfaketime the clock jump is skipped and said so. No code of the apps knows about it.
// - a Postgres crash: the suite's own embedded Postgres gets pg_ctl's immediate shutdown (SIGQUIT: no
//   checkpoint, WAL recovery at the next start, as after a crash) and is started again.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { embeddedPostgres } = require('./embedded-postgres');

const run = (cmd, args) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || r.error?.message || '').trim()}`);
};

/** A network namespace `name` linked to the host by a veth pair on 10.<a>.<b>.0/30; or `{ unavailable }` with the reason. */
function createNetns(name, subnet = '10.203.77') {
  if (process.getuid?.() !== 0) return { unavailable: 'needs root (CAP_NET_ADMIN) for a network namespace' };
  if (spawnSync('ip', ['-V']).status !== 0) return { unavailable: 'needs iproute2 (ip)' };
  const hostIf = `${name}-h`.slice(0, 15);
  const nsIf = `${name}-n`.slice(0, 15);
  const hostIp = `${subnet}.1`;
  const nsIp = `${subnet}.2`;
  const teardown = () => {
    spawnSync('ip', ['link', 'del', hostIf]);
    spawnSync('ip', ['netns', 'del', name]);
  };
  try {
    teardown();
    run('ip', ['netns', 'add', name]);
    run('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    run('ip', ['link', 'set', nsIf, 'netns', name]);
    run('ip', ['addr', 'add', `${hostIp}/30`, 'dev', hostIf]);
    run('ip', ['link', 'set', hostIf, 'up']);
    run('ip', ['netns', 'exec', name, 'ip', 'addr', 'add', `${nsIp}/30`, 'dev', nsIf]);
    run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up']);
    run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
  } catch (e) {
    teardown();
    return { unavailable: `cannot create a network namespace here: ${e.message}` };
  }
  return {
    name,
    hostIp,
    nsIp,
    /** Cuts the node off: every packet between it and the host (other nodes, apps) is lost. */
    partition: () => run('ip', ['link', 'set', hostIf, 'down']),
    heal: () => run('ip', ['link', 'set', hostIf, 'up']),
    teardown,
  };
}

const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/faketime/libfaketime.so.1'];

/** A wall-clock offset for one process (libfaketime), changed at run time through `file`; or `{ unavailable }`. */
function createClockOffset(file) {
  let lib = LIBFAKETIME.find((p) => fs.existsSync(p));
  // As root on Debian, the suite installs it (as npm test installs nats-server and bubblewrap).
  if (!lib && process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get']).status === 0) {
    const quiet = { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
    process.stderr.write('faults: installing libfaketime (apt-get install faketime) for the clock fault…\n');
    if (spawnSync('apt-get', ['install', '-y', '-qq', 'faketime'], quiet).status !== 0) {
      spawnSync('apt-get', ['update', '-qq'], quiet);
      spawnSync('apt-get', ['install', '-y', '-qq', 'faketime'], quiet);
    }
    lib = LIBFAKETIME.find((p) => fs.existsSync(p));
  }
  if (!lib) return { unavailable: 'needs libfaketime (apt-get install faketime)' };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '+0\n');
  return {
    // libfaketime hands its shared state to child processes through /dev/shm, which bubblewrap's sandbox
    // does not have (the sandbox's node fails to start): this runner runs component code in worker
    // threads of its own process (SANDBOX_ISOLATION=none), so the jump reaches the component code too.
    env: { LD_PRELOAD: lib, FAKETIME_TIMESTAMP_FILE: file, FAKETIME_CACHE_DURATION: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1', SANDBOX_ISOLATION: 'none' },
    /** Moves the process's wall clock to `seconds` from the real one (takes effect within a second). */
    set: (seconds) => fs.writeFileSync(file, `${seconds >= 0 ? '+' : ''}${seconds}s\n`),
  };
}

/** An embedded Postgres of the suite's own (never the shared one on 5432), which can crash and start again. */
async function startOwnPostgres({ dir, port }) {
  const server = await embeddedPostgres({ dir, port });
  await server.start();
  return {
    url: server.url,
    /** An immediate shutdown, recovered from the WAL at the next start. */
    crash: () => server.crash(),
    start: () => server.start(),
    stop: () => server.stop(),
  };
}

module.exports = { createNetns, createClockOffset, startOwnPostgres };
