import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Which destination addresses outbound requests (webhook deliveries, component_url
 * fetches) may reach. Checked at connect time, after DNS resolution, so a name that
 * resolves to a forbidden address is refused too.
 */
export interface AddressPolicy {
  /** 127.0.0.0/8 and ::1 (the local quick start and the tests allow them). */
  allowLoopback: boolean;
  /** RFC 1918, carrier-grade NAT, unique-local IPv6. */
  allowPrivate: boolean;
  /**
   * Ports of the platform's own services (NATS, Postgres, the runner's and delivery's ops ports): refused on
   * this machine's addresses (loopback and its interfaces) whatever `allowLoopback` says.
   */
  platformPorts?: ReadonlySet<number>;
  /** Set (by `policyForUrl`) on the policy of one request to one of `platformPorts`. */
  platformPort?: number;
}

export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'multicast' | 'reserved' | 'invalid';

const always = new BlockList();
// Cloud metadata endpoints: refused whatever the policy.
always.addAddress('169.254.169.254', 'ipv4');
always.addAddress('169.254.170.2', 'ipv4');
always.addAddress('100.100.100.200', 'ipv4');
always.addAddress('fd00:ec2::254', 'ipv6');

const linkLocal = new BlockList();
linkLocal.addSubnet('169.254.0.0', 16, 'ipv4');
linkLocal.addSubnet('fe80::', 10, 'ipv6');

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

const privateRanges = new BlockList();
privateRanges.addSubnet('10.0.0.0', 8, 'ipv4');
privateRanges.addSubnet('172.16.0.0', 12, 'ipv4');
privateRanges.addSubnet('192.168.0.0', 16, 'ipv4');
privateRanges.addSubnet('100.64.0.0', 10, 'ipv4');
// Set aside for benchmarking (RFC 2544) and used as internal address space by some networks and VPNs.
privateRanges.addSubnet('198.18.0.0', 15, 'ipv4');
privateRanges.addSubnet('fc00::', 7, 'ipv6');
// IPv6 site-local (deprecated by RFC 3879, still routed inside some sites).
privateRanges.addSubnet('fec0::', 10, 'ipv6');

const unspecified = new BlockList();
unspecified.addSubnet('0.0.0.0', 8, 'ipv4');
unspecified.addAddress('::', 'ipv6');

const multicast = new BlockList();
multicast.addSubnet('224.0.0.0', 4, 'ipv4');
multicast.addSubnet('ff00::', 8, 'ipv6');

const reserved = new BlockList();
reserved.addSubnet('240.0.0.0', 4, 'ipv4');
reserved.addAddress('255.255.255.255', 'ipv4');

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail counts as two). */
export function ipv6Groups(ip: string): number[] | undefined {
  let text = ip.split('%')[0];
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (x: string | undefined): number[] => (x ? x.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

const ipv4Of = (hi: number, lo: number): string => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');

/**
 * The IPv4 addresses an IPv6 address may stand for, when it embeds one: IPv4-mapped (`::ffff:0:0/96`), SIIT's
 * IPv4-translated (`::ffff:0:0:0/96`), IPv4-compatible (`::/96`), NAT64 (`64:ff9b::/96`), NAT64 local-use
 * (`64:ff9b:1::/48`) and 6to4 (`2002::/16`). Such an address reaches that IPv4 host, so it is judged as it.
 */
function embeddedIpv4(ip: string): string[] {
  const g = ipv6Groups(ip);
  if (!g) return [];
  const zeros = (n: number): boolean => g.slice(0, n).every((x) => x === 0);
  if (zeros(5) && g[5] === 0xffff) return [ipv4Of(g[6], g[7])];
  if (zeros(4) && g[4] === 0xffff && g[5] === 0) return [ipv4Of(g[6], g[7])];
  if (zeros(6) && (g[6] !== 0 || g[7] > 1)) return [ipv4Of(g[6], g[7])];
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return [ipv4Of(g[6], g[7])];
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return localUseNat64(g);
  if (g[0] === 0x2002) return [ipv4Of(g[1], g[2])];
  return [];
}

/**
 * A NAT64 local-use address (RFC 8215) read with each prefix length RFC 6052 allows inside `64:ff9b:1::/48` (48, 56,
 * 64 and 96 bits; the IPv4 address skips bits 64 to 71): which one a network's gateway uses is not known here, so
 * every reading is judged. A reading in 0.0.0.0/8 (a shorter prefix read over a /96's zeros) is left out unless
 * every reading is.
 */
function localUseNat64(g: number[]): string[] {
  const b = g.flatMap((x) => [x >> 8, x & 0xff]);
  const reads = [
    [b[6], b[7], b[9], b[10]],
    [b[7], b[9], b[10], b[11]],
    [b[9], b[10], b[11], b[12]],
    [b[12], b[13], b[14], b[15]],
  ].map((x) => x.join('.'));
  const meant = reads.filter((r) => !r.startsWith('0.'));
  return [...new Set(meant.length ? meant : reads.slice(3))];
}

/**
 * How an address is judged: as the IPv4 addresses it embeds (one, or for a NAT64 local-use address each reading of
 * it), or as itself. Exported for address rules (SANDBOX_EGRESS_DENY and the platform's services), which must not
 * miss `64:ff9b::10.0.0.5` for `10.0.0.5:4222`. Empty for what is no address.
 */
export function judgedAddresses(ip: string): [string, 'ipv4' | 'ipv6'][] {
  const v = isIP(ip);
  if (v === 4) return [[ip, 'ipv4']];
  if (v !== 6) return [];
  const v4 = embeddedIpv4(ip);
  return v4.length ? v4.map((a) => [a, 'ipv4']) : [[ip, 'ipv6']];
}

/** The class of one judged address. */
function classOf([addr, family]: [string, 'ipv4' | 'ipv6']): AddressClass {
  if (always.check(addr, family)) return 'metadata';
  if (linkLocal.check(addr, family)) return 'link-local';
  if (loopback.check(addr, family)) return 'loopback';
  if (privateRanges.check(addr, family)) return 'private';
  if (unspecified.check(addr, family)) return 'unspecified';
  if (multicast.check(addr, family)) return 'multicast';
  if (reserved.check(addr, family)) return 'reserved';
  return 'public';
}

/** The classes an address reading several ways may be, the most refused first. */
const SEVERITY: AddressClass[] = ['invalid', 'metadata', 'link-local', 'unspecified', 'multicast', 'reserved', 'loopback', 'private', 'public'];

/** Every class of the addresses `ip` is judged as (one, but for a NAT64 local-use address), the most refused first. */
function classesOf(ip: string): AddressClass[] {
  const judged = judgedAddresses(ip);
  if (!judged.length) return ['invalid'];
  return [...new Set(judged.map(classOf))].sort((x, y) => SEVERITY.indexOf(x) - SEVERITY.indexOf(y));
}

/** The class of an address; of one judged several ways, the most refused of them. */
export function classifyAddress(ip: string): AddressClass {
  return classesOf(ip)[0];
}

/** How long the list of this machine's addresses is kept before it is read again (interfaces come and go). */
const OWN_ADDRESSES_TTL_MS = 10_000;
let ownAddresses: { list: BlockList; readAtMs: number } | undefined;

function ownAddressList(): BlockList {
  const now = Date.now();
  if (ownAddresses && now - ownAddresses.readAtMs < OWN_ADDRESSES_TTL_MS) return ownAddresses.list;
  const list = new BlockList();
  for (const entries of Object.values(networkInterfaces())) {
    for (const a of entries ?? []) {
      for (const [addr, family] of judgedAddresses(a.address.split('%')[0])) list.addAddress(addr, family);
    }
  }
  ownAddresses = { list, readAtMs: now };
  return list;
}

/**
 * Whether `ip` is an address of one of this machine's interfaces. A service listening on
 * 0.0.0.0 (the metrics ports, a NATS monitor, anything else on the host) answers there as on
 * 127.0.0.1, so the platform's own requests treat such an address as loopback.
 */
export function isOwnAddress(ip: string): boolean {
  const list = ownAddressList();
  return judgedAddresses(ip).some(([addr, family]) => list.check(addr, family));
}

/**
 * Why an address is refused under a policy, or undefined when it is allowed. `shown` names the destination in the
 * reason: the address itself, or the host name it was resolved from (the caller's DNS answer is not told).
 */
export function refusalReason(ip: string, policy: AddressPolicy, shown = ip): string | undefined {
  for (const cls of classesOf(ip)) {
    const reason = classRefusal(cls, policy, shown);
    if (reason) return reason;
  }
  return undefined;
}

function classRefusal(cls: AddressClass, policy: AddressPolicy, shown: string): string | undefined {
  switch (cls) {
    case 'public':
      return undefined;
    case 'loopback':
      return policy.allowLoopback ? undefined : `${shown} is a loopback address (allowed only with ALLOW_LOOPBACK=true)`;
    case 'private':
      return policy.allowPrivate ? undefined : `${shown} is a private address (allowed only with ALLOW_PRIVATE_ADDRESSES=true)`;
    case 'metadata':
      return `${shown} is a cloud metadata address and is always refused`;
    case 'link-local':
      return `${shown} is a link-local address and is always refused`;
    default:
      return `${shown} is ${/^[aeiou]/.test(cls) ? 'an' : 'a'} ${cls} address and is always refused`;
  }
}

/** NATS (clients, cluster routes, monitoring) and Postgres on their standard ports: refused on this machine's addresses even to an app not told where they are. */
export const STANDARD_PLATFORM_PORTS = [4222, 6222, 8222, 5432];

/** The settings that say where the platform's own services are, and what outbound requests may reach. */
export interface PlatformSettings {
  allowLoopback: boolean;
  allowPrivateAddresses: boolean;
  natsUrl: string;
  /** The platform's Postgres (api, delivery); the runner is not told it, so its standard port is refused on this machine's addresses. */
  databaseUrl?: string;
  apiMetricsPort: number;
  runnerMetricsPort: number;
  deliveryMetricsPort: number;
}

/**
 * The policy an app's settings describe: ALLOW_LOOPBACK, ALLOW_PRIVATE_ADDRESSES, and the platform's own ports
 * (NATS_URL's and DATABASE_URL's, the standard NATS and Postgres ports, API_METRICS_PORT, RUNNER_METRICS_PORT, DELIVERY_METRICS_PORT).
 * The api's own port is not one of them: a source's endpoint is public by design.
 */
export function policyFromConfig(config: PlatformSettings): AddressPolicy {
  const ports = new Set([...STANDARD_PLATFORM_PORTS, config.apiMetricsPort, config.runnerMetricsPort, config.deliveryMetricsPort]);
  const servers = [...config.natsUrl.split(',').map((s) => [s.trim(), 4222] as const), ...(config.databaseUrl ? [[config.databaseUrl, 5432] as const] : [])];
  for (const [server, standard] of servers) {
    try {
      ports.add(Number(new URL(server).port || standard));
    } catch {
      // Checked when the settings were read.
    }
  }
  ports.delete(0);
  return { allowLoopback: config.allowLoopback, allowPrivate: config.allowPrivateAddresses, platformPorts: ports };
}

/** The policy of one request to `url`: marked when its port is one of the platform's own. */
export function policyForUrl(url: URL, policy: AddressPolicy): AddressPolicy {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return policy.platformPorts?.has(port) ? { ...policy, platformPort: port } : policy;
}
