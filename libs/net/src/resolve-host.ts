import { promises as dnsPromises, type LookupAddress } from 'node:dns';
import { readFile } from 'node:fs/promises';

/** How long one query waits for a DNS server's answer, and how many times it is sent. */
const QUERY_TIMEOUT_MS = 2_500;
const QUERY_TRIES = 2;
/** How long /etc/hosts is read from memory before it is read again. */
const HOSTS_TTL_MS = 30_000;

/** How long an answer is kept at most (a record's own TTL when shorter), and a name with no address. */
const ANSWER_TTL_MAX_MS = 30_000;
const NO_ADDRESS_TTL_MS = 5_000;
/** Names kept at once for the platform's own lookups, and for each account's; past it the least recently used goes. */
const SHARED_NAMES_MAX = 1_000;
const ACCOUNT_NAMES_MAX = 100;
/** Accounts whose answers are kept at once; past it the answers of the one that looked up least recently go. */
const ACCOUNTS_MAX = 1_000;

interface Cached {
  untilMs: number;
  /** The addresses, or the error a name with no address got. */
  answer: LookupAddress[] | NodeJS.ErrnoException;
}

/** One account's (or the platform's) recent answers, and its lookups in progress (a second lookup of a name waits for the first). */
interface Cache {
  answers: Map<string, Cached>;
  pending: Map<string, Promise<LookupAddress[]>>;
  max: number;
}

export interface ResolveOptions {
  /**
   * The account the name is looked up for: its answers and lookups in progress are its own. Shared, one account's
   * lookups made another's fast (telling it which hosts the other talks to) and its many names evicted the other's.
   * Absent: the platform's own (shared) answers.
   */
  account?: string;
  resolver?: dnsPromises.Resolver;
}

let shared: dnsPromises.Resolver | undefined;
let hosts: { readAtMs: number; names: Map<string, LookupAddress[]> } | undefined;
/** Per resolver, per account ('' the platform's own), least recently used first. */
const caches = new WeakMap<dnsPromises.Resolver, Map<string, Cache>>();

/**
 * Resolves a host name a tenant chose (a webhook URL, a workflow's send, a component's connection) without libuv's
 * thread pool. `dns.lookup` runs getaddrinfo on one of the pool's four threads, which also do the process's file,
 * crypto and zlib work: a few lookups of a domain whose DNS server never answers, each held for the system
 * resolver's whole timeout, took all four, stalling every account's connections by name and the app's own file
 * reads. Here c-ares sends the queries itself, on the event loop, each bounded in time; a name in /etc/hosts
 * (localhost, a compose service's alias) is answered from that file first, as getaddrinfo does. IPv4 addresses
 * come first. Rejects with `ENOTFOUND` (no address) or the resolver's code (`ETIMEOUT`, `ESERVFAIL`, …).
 *
 * Answers are kept for their records' TTL, at most 30 s (a name with no address 5 s; a failed query not at all),
 * and lookups of a name already being looked up wait for that one: a source connecting in a loop sent two queries
 * (A and AAAA) per connection. Each account has answers of its own (`ResolveOptions.account`), 100 names at most
 * (the answers of 1,000 accounts at most); the platform's own lookups share 1,000 names.
 */
export async function resolveHost(hostname: string, opts: ResolveOptions = {}): Promise<LookupAddress[]> {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const fromFile = (await hostsFile()).get(name);
  if (fromFile) return fromFile;
  const resolver = opts.resolver ?? sharedResolver();
  const cache = cacheOf(resolver, opts.account ?? '');
  const hit = cache.answers.get(name);
  if (hit && hit.untilMs > Date.now()) {
    // Most recently used last: the first ones go when the cache is full.
    cache.answers.delete(name);
    cache.answers.set(name, hit);
    if (Array.isArray(hit.answer)) return hit.answer.map((a) => ({ ...a }));
    throw Object.assign(new Error(hit.answer.message), { code: hit.answer.code, hostname });
  }
  const pending = cache.pending.get(name);
  if (pending) return (await pending).map((a) => ({ ...a }));
  const query = queryBoth(name, hostname, resolver, cache);
  cache.pending.set(name, query);
  try {
    return (await query).map((a) => ({ ...a }));
  } finally {
    cache.pending.delete(name);
  }
}

/** The account's cache (made most recently used); past ACCOUNTS_MAX accounts, the least recently used one's goes. */
function cacheOf(resolver: dnsPromises.Resolver, account: string): Cache {
  let byAccount = caches.get(resolver);
  if (!byAccount) caches.set(resolver, (byAccount = new Map()));
  let cache = byAccount.get(account);
  if (cache) byAccount.delete(account);
  else cache = { answers: new Map(), pending: new Map(), max: account ? ACCOUNT_NAMES_MAX : SHARED_NAMES_MAX };
  byAccount.set(account, cache);
  if (byAccount.size <= ACCOUNTS_MAX + 1) return cache;
  for (const oldest of byAccount.keys()) {
    if (oldest === '') continue;
    byAccount.delete(oldest);
    break;
  }
  return cache;
}

async function queryBoth(name: string, hostname: string, resolver: dnsPromises.Resolver, { answers, max }: Cache): Promise<LookupAddress[]> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name, { ttl: true }), resolver.resolve6(name, { ttl: true })]);
  const records = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  const found = [
    ...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ address: r.address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ address: r.address, family: 6 })) : []),
  ];
  const keep = (answer: Cached['answer'], ttlMs: number): void => {
    if (ttlMs <= 0) return;
    if (answers.size >= max) answers.delete(answers.keys().next().value as string);
    answers.set(name, { untilMs: Date.now() + ttlMs, answer });
  };
  if (found.length) {
    keep(found, Math.min(ANSWER_TTL_MAX_MS, ...records.map((r) => r.ttl * 1000)));
    return found;
  }
  const failed = [v4, v6].find((r): r is PromiseRejectedResult => r.status === 'rejected' && !/^(ENOTFOUND|ENODATA)$/.test(String((r.reason as NodeJS.ErrnoException).code)));
  const code = failed ? String((failed.reason as NodeJS.ErrnoException).code) : 'ENOTFOUND';
  const error = Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code, hostname });
  if (!failed) keep(error, NO_ADDRESS_TTL_MS);
  throw error;
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
