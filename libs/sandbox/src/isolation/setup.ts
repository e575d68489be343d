import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { totalmem } from 'node:os';
import { type PlatformSettings, STANDARD_PLATFORM_PORTS } from '@app/net';
import type { EgressRules } from './egress-rules';
import { parseAddressRule, trustProxyFunction, type TrustProxy } from '@app/config';
import { isLocalAddress, localAddresses } from './egress-rules';
import type { SandboxIsolationOptions } from './isolated-runner';
import { findBwrap, probeSandbox } from './sandbox-command';

/** The settings the isolation is built from (a subset of the apps' config). */
export interface IsolationSettings extends PlatformSettings {
  sandboxIsolation: string;
  sandboxRunIn: string;
  sandboxThreadsPerAccount: number;
  sandboxMemoryMb: number;
  sandboxMemoryTotalMb: number;
  sandboxTmpMb: number;
  sandboxNice: number;
  sandboxIdleMs: number;
  sandboxMaxProcesses: number;
  sandboxUidBase: number;
  sandboxEgressAllow: string;
  sandboxEgressDeny: string;
  sandboxEgressMaxConnections: number;
  sandboxEgressBytesPerSecond: number;
  sandboxEgressConnectsPerSecond: number;
  sandboxEgressRefusedPerSecond: number;
  sandboxEgressLookupsAtOnce: number;
  dataDir: string;
  /** Whom the api believes about the client (TRUST_PROXY): see `apiTrustsThisMachine`. */
  trustProxy?: TrustProxy;
}

export interface Isolation {
  /** `namespaces`, or `none` when the operator opted out. */
  mode: 'namespaces' | 'none';
  /** One line for the start log and /healthz. */
  summary: string;
  options?: SandboxIsolationOptions;
}

export class IsolationUnavailableError extends Error {}

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const rule = (ip: string, port: number): string => (isIP(ip.split('/')[0]) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`);

/** `host:port` entries of server URLs (`nats://a:4222,b`, `postgres://u:p@h:5432/db`), names resolved. */
async function serverAddresses(urls: string[], defaultPort: number): Promise<{ ip: string; port: number }[]> {
  const out: { ip: string; port: number }[] = [];
  for (const server of urls) {
    let u: URL;
    try {
      u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `nats://${server}`);
    } catch {
      continue;
    }
    const port = Number(u.port || defaultPort);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const ips = isIP(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
    for (const ip of ips) out.push({ ip, port });
  }
  return out;
}

/**
 * The platform's own services, refused to component code whatever the policy:
 * the NATS servers, Postgres (when this app knows it) and the runner's and
 * delivery's ops ports. A service on this machine is refused on every local
 * address (one listening on 0.0.0.0 answers on 127.0.0.2 and the interfaces
 * too), and so are Postgres's and NATS's standard ports: the runner is not
 * told where Postgres is. The api's port is public by design (sources'
 * endpoints): code may call it as any client may, under the address policy.
 */
async function platformServices(s: IsolationSettings): Promise<string[]> {
  const local = localAddresses();
  const out: string[] = [];
  const servers = [...(await serverAddresses(list(s.natsUrl), 4222)), ...(s.databaseUrl ? await serverAddresses([s.databaseUrl], 5432) : [])];
  const localPorts = new Set([s.apiMetricsPort, s.runnerMetricsPort, s.deliveryMetricsPort, ...STANDARD_PLATFORM_PORTS].filter((p) => p > 0));
  for (const { ip, port } of servers) {
    if (isLocalAddress(ip)) localPorts.add(port);
    else out.push(rule(ip, port));
  }
  for (const addr of local) for (const p of localPorts) out.push(rule(addr, p));
  return out.filter((r) => {
    try {
      parseAddressRule(r);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Whether the api takes a connection from this machine for a proxy's (TRUST_PROXY `127.0.0.1`, `loopback`, `true`,
 * a number, an interface's address…). The egress proxy connects from this machine, so component code reaching the
 * api — directly, or through a proxy on this machine, which appends the address it saw, this machine's — would have
 * its own X-Forwarded-For believed: another account's events would carry the client_ip it chose, and the bounds per
 * client address would count it as whoever it named. Then component code does not reach this machine at all.
 */
function apiTrustsThisMachine(s: IsolationSettings): boolean {
  if (s.trustProxy === undefined || s.trustProxy === false) return false;
  const trusted = trustProxyFunction(s.trustProxy);
  return ['127.0.0.1', '::1', ...localAddresses().filter((a) => isIP(a) > 0 && a !== '0.0.0.0')].some((a) => trusted(a, 0));
}

/**
 * Decides how component code is isolated, from SANDBOX_ISOLATION. `namespaces`
 * (the default) needs bubblewrap and working namespaces: when either is
 * missing the app refuses to start (never silently unisolated); `none` is the
 * operator's explicit opt-out.
 */
export async function setUpIsolation(s: IsolationSettings): Promise<Isolation> {
  if (s.sandboxIsolation === 'none') {
    return { mode: 'none', summary: 'none (SANDBOX_ISOLATION=none): component code runs in worker threads of this process; every account can reach what the process holds — for one trusted team only' };
  }
  const bwrap = findBwrap();
  if (!bwrap) {
    throw new IsolationUnavailableError(
      'SANDBOX_ISOLATION=namespaces needs bubblewrap (bwrap), which is not installed: install it (`apt-get install bubblewrap`; npm start and npm test do this as root), or set SANDBOX_ISOLATION=none to run component code without isolation (one trusted team only)',
    );
  }
  const asRoot = process.getuid?.() === 0;
  const failure = probeSandbox(bwrap, asRoot);
  if (failure) {
    throw new IsolationUnavailableError(
      `SANDBOX_ISOLATION=namespaces: bubblewrap cannot create the sandbox here (${failure}). Run the app as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; in a container: --cap-add SYS_ADMIN with seccomp/apparmor unconfined), or set SANDBOX_ISOLATION=none (one trusted team only)`,
    );
  }
  const trusted = apiTrustsThisMachine(s);
  const egress: EgressRules = {
    policy: { allowLoopback: s.allowLoopback && !trusted, allowPrivate: s.allowPrivateAddresses },
    thisMachineRefused: s.allowLoopback && trusted ? 'TRUST_PROXY believes connections from this machine' : undefined,
    // Their entries were checked when the configuration was loaded (libs/config address-rule.ts).
    allow: list(s.sandboxEgressAllow),
    deny: [...list(s.sandboxEgressDeny), ...(await platformServices(s))],
  };
  const options: SandboxIsolationOptions = {
    bwrap,
    tmpMb: s.sandboxTmpMb,
    nice: s.sandboxNice,
    runIn: s.sandboxRunIn as SandboxIsolationOptions['runIn'],
    threadsPerAccount: s.sandboxThreadsPerAccount,
    memoryMb: s.sandboxMemoryMb,
    memoryTotalMb: s.sandboxMemoryTotalMb || Math.floor(totalmem() / 2 / 1024 / 1024),
    idleMs: s.sandboxIdleMs,
    maxProcesses: s.sandboxMaxProcesses,
    uidBase: s.sandboxUidBase,
    egress,
    egressMaxConnections: s.sandboxEgressMaxConnections,
    egressBytesPerSecond: s.sandboxEgressBytesPerSecond,
    egressConnectsPerSecond: s.sandboxEgressConnectsPerSecond,
    egressRefusedPerSecond: s.sandboxEgressRefusedPerSecond,
    egressLookupsAtOnce: s.sandboxEgressLookupsAtOnce,
  };
  const who = asRoot ? `uids ${s.sandboxUidBase}+ (one per account)` : 'a user namespace of the app\'s uid';
  return {
    mode: 'namespaces',
    summary: `namespaces: one process per account under bubblewrap (no network but the egress proxy, own pid/ipc/mount namespaces), ${who}, Node permission model, ${s.sandboxMemoryMb} MiB, a ${s.sandboxTmpMb} MiB /tmp and ${s.sandboxRunIn === 'process' ? "runs on the process's own thread" : `${s.sandboxThreadsPerAccount} worker threads per account`}`,
    options,
  };
}
