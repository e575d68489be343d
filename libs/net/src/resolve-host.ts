import { promises as dnsPromises, type LookupAddress } from 'node:dns';
import { readFile } from 'node:fs/promises';

/** How long one query waits for a DNS server's answer, and how many times it is sent. */
const QUERY_TIMEOUT_MS = 2_500;
const QUERY_TRIES = 2;
/** How long /etc/hosts is read from memory before it is read again. */
const HOSTS_TTL_MS = 30_000;

let shared: dnsPromises.Resolver | undefined;
let hosts: { readAtMs: number; names: Map<string, LookupAddress[]> } | undefined;

/**
 * Resolves a host name a tenant chose (a webhook URL, a workflow's send, a component's connection) without libuv's
 * thread pool. `dns.lookup` runs getaddrinfo on one of the pool's four threads, which also do the process's file,
 * crypto and zlib work: a few lookups of a domain whose DNS server never answers, each held for the system
 * resolver's whole timeout, took all four, stalling every account's connections by name and the app's own file
 * reads. Here c-ares sends the queries itself, on the event loop, each bounded in time; a name in /etc/hosts
 * (localhost, a compose service's alias) is answered from that file first, as getaddrinfo does. IPv4 addresses
 * come first. Rejects with `ENOTFOUND` (no address) or the resolver's code (`ETIMEOUT`, `ESERVFAIL`, …).
 */
export async function resolveHost(hostname: string, resolver: dnsPromises.Resolver = sharedResolver()): Promise<LookupAddress[]> {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const fromFile = (await hostsFile()).get(name);
  if (fromFile) return fromFile;
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
  const found = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
  if (found.length) return found;
  const failed = [v4, v6].find((r): r is PromiseRejectedResult => r.status === 'rejected' && !/^(ENOTFOUND|ENODATA)$/.test(String((r.reason as NodeJS.ErrnoException).code)));
  const code = failed ? String((failed.reason as NodeJS.ErrnoException).code) : 'ENOTFOUND';
  throw Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code, hostname });
}

function sharedResolver(): dnsPromises.Resolver {
  return (shared ??= new dnsPromises.Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES }));
}

async function hostsFile(): Promise<Map<string, LookupAddress[]>> {
  const now = Date.now();
  if (hosts && now - hosts.readAtMs < HOSTS_TTL_MS) return hosts.names;
  const text = await readFile('/etc/hosts', 'utf8').catch(() => '');
  hosts = { readAtMs: now, names: parseHosts(text) };
  return hosts.names;
}

/** The names of an /etc/hosts text and their addresses, in the file's order (IPv4 first). */
export function parseHosts(text: string): Map<string, LookupAddress[]> {
  const names = new Map<string, LookupAddress[]>();
  for (const line of text.split('\n')) {
    const [address, ...aliases] = line.replace(/#.*/, '').trim().split(/\s+/);
    const family = address?.includes(':') ? 6 : 4;
    if (!address || !aliases.length || (family === 4 && !/^\d+\.\d+\.\d+\.\d+$/.test(address))) continue;
    for (const alias of aliases) {
      const list = names.get(alias.toLowerCase()) ?? [];
      if (!list.some((a) => a.address === address)) list.push({ address, family });
      names.set(alias.toLowerCase(), list);
    }
  }
  for (const list of names.values()) list.sort((a, b) => a.family - b.family);
  return names;
}
