import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { HostConfig } from './host-protocol';

/** Where things appear inside a sandbox: the project's code, the account's code, its egress sockets; /tmp is its own tmpfs. */
export const INSIDE = { app: '/app', code: '/code', sockets: '/run/egress' } as const;

export interface Mount {
  outside: string;
  inside: string;
  writable?: boolean;
}

/** How one sandbox host process is started: bubblewrap, then (as root) setpriv to an unprivileged uid, then node with the permission model. */
export interface SandboxCommandInput {
  bwrap: string;
  /** The host script, as seen inside. */
  hostFile: string;
  hostConfig: HostConfig;
  /** Read-only mounts (also readable under the permission model). */
  readOnly: Mount[];
  /** Size of the sandbox's /tmp, a tmpfs of its own: the only writable place. */
  tmpMb: number;
  /** nice of the sandbox (0–19): component code cannot raise its priority back. */
  nice: number;
  /** The account's egress sockets (mounted at INSIDE.sockets; not readable as files). */
  sockets: string;
  /** uid/gid the sandbox runs as when the app runs as root. */
  uid: number;
  asRoot: boolean;
}

/** Root-level entries of a merged-/usr system: symlinks into /usr stay symlinks, real directories are bound read-only. */
function systemRoot(args: string[]): void {
  args.push('--ro-bind', '/usr', '/usr');
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    const p = `/${name}`;
    if (!existsSync(p)) continue;
    if (lstatSync(p).isSymbolicLink()) args.push('--symlink', readlinkSync(p), p);
    else args.push('--ro-bind', p, p);
  }
  args.push('--perms', '0755', '--dir', '/etc');
  for (const p of ['/etc/ssl', '/etc/ca-certificates', '/etc/localtime']) if (existsSync(p)) args.push('--ro-bind', p, p);
}

/** `--dir` (mode 0755) for every ancestor of the mount points: bubblewrap would create them mode 0700, unreadable to the sandbox's uid. */
function ancestors(paths: string[]): string[] {
  const dirs = new Set<string>();
  for (const p of paths) {
    for (let d = dirname(p); d !== '/' && d !== '.'; d = dirname(d)) dirs.add(d);
  }
  return [...dirs].filter((d) => !paths.includes(d)).sort((a, b) => a.length - b.length);
}

/** The node binary and, when it lives outside /usr, its install prefix (mounted read-only at the same path). */
export function nodeInstall(): { node: string; prefix?: string } {
  const node = realpathSync(process.execPath);
  return node.startsWith('/usr/') ? { node } : { node, prefix: dirname(dirname(node)) };
}

/**
 * The environment of a sandbox host: nothing of the app's. UV_THREADPOOL_SIZE=1: async crypto (`pbkdf2`, `scrypt`),
 * zlib and file calls run on libuv's thread pool, four threads by default, whose work the run timeout does not see
 * (the process's own thread stays free) and which goes on after the run ended: one run queued hours of `pbkdf2` on
 * four cores and returned at once.
 */
export function sandboxEnv(extraCaCerts?: string): Record<string, string> {
  return { TMPDIR: '/tmp', HOME: '/tmp', PATH: '/usr/bin:/bin', UV_THREADPOOL_SIZE: '1', ...(extraCaCerts ? { NODE_EXTRA_CA_CERTS: extraCaCerts } : {}) };
}

const CHOOM = '/usr/bin/choom';

export function sandboxCommand(input: SandboxCommandInput): { command: string; args: string[] } {
  const { node, prefix } = nodeInstall();
  const readOnly = prefix ? [...input.readOnly, { outside: prefix, inside: prefix }] : input.readOnly;
  const args = ['--die-with-parent', '--new-session', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (!input.asRoot) args.push('--unshare-user');
  systemRoot(args);
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '01777', '--size', String(input.tmpMb * 1024 * 1024), '--tmpfs', '/tmp', '--perms', '0755', '--dir', '/run', '--bind', input.sockets, INSIDE.sockets);
  for (const d of ancestors(readOnly.map((m) => m.inside))) if (!d.startsWith('/etc/')) args.push('--perms', '0755', '--dir', d);
  for (const m of readOnly) args.push('--ro-bind', m.outside, m.inside);
  args.push('--chdir', '/tmp', '--');
  // A busy tenant's threads get the CPU after the platform's own processes (lowering a priority needs no privilege; raising it back does).
  if (input.nice > 0) args.push('/usr/bin/nice', '-n', String(input.nice), '--');
  args.push('/usr/bin/prlimit', '--core=0', '--nofile=4096', '--nproc=4096', '--');
  // When the machine runs out of memory, the kernel's OOM killer takes a sandbox before Postgres, NATS or an app (raising
  // one's own oom_score_adj needs no privilege; lowering it back does). util-linux's choom, beside prlimit.
  if (existsSync(CHOOM)) args.push(CHOOM, '-n', '1000', '--');
  if (input.asRoot) args.push('/usr/bin/setpriv', `--reuid=${input.uid}`, `--regid=${input.uid}`, '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--');
  const slash = (p: string) => (p.endsWith('/') ? p : `${p}/`);
  args.push(
    node,
    '--experimental-permission',
    // One flag per path: this Node reads a comma in the value as part of the path.
    ...readOnly.map((m) => `--allow-fs-read=${statSync(m.outside).isDirectory() ? slash(m.inside) : m.inside}`),
    '--allow-fs-read=/tmp/',
    '--allow-fs-write=/tmp/',
    // Worker threads only for the pool that needs them: on its own thread, component code cannot start one at all.
    ...(input.hostConfig.runIn === 'workers' ? ['--allow-worker'] : [`--max-old-space-size=${input.hostConfig.heapMb}`]),
    // One V8 background thread (garbage collection, WebAssembly compiles): component code cannot queue work for four.
    '--v8-pool-size=1',
    '--no-warnings',
    input.hostFile,
    JSON.stringify(input.hostConfig),
  );
  return { command: input.bwrap, args };
}

/** bubblewrap on PATH, or undefined. */
export function findBwrap(): string | undefined {
  for (const p of ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']) if (existsSync(p)) return p;
  const r = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : undefined;
}

/** Whether the namespaces work here: runs `true` in the same kind of sandbox (as root also the uid switch). Returns the failure, or undefined. */
export function probeSandbox(bwrap: string, asRoot: boolean): string | undefined {
  const args = ['--die-with-parent', '--unshare-net', '--unshare-pid', '--unshare-ipc', ...(asRoot ? [] : ['--unshare-user'])];
  systemRoot(args);
  args.push('--proc', '/proc', '--dev', '/dev', '--');
  if (asRoot) args.push('/usr/bin/setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--no-new-privs', '--');
  args.push('/usr/bin/prlimit', '--core=0', '--', '/bin/sh', '-c', 'exit 0');
  const r = spawnSync(bwrap, args, { encoding: 'utf8', timeout: 10_000 });
  if (r.status === 0) return undefined;
  return (r.stderr || r.error?.message || `exit ${r.status}`).trim();
}
