import { isIP } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';

/**
 * TRUST_PROXY read: `false` (no proxy: the client is the connection's address), `true` (every hop), a number of hops
 * in front of the api, or the addresses, CIDRs and proxy-addr's names (`loopback`, `uniquelocal`) of trusted proxies.
 */
export type TrustProxy = boolean | number | string[];

const NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** What TRUST_PROXY says, in the forms Fastify's and Express's `trustProxy` take; throws (the message for the operator) naming what is none of them. */
export function parseTrustProxy(text: string): TrustProxy {
  const t = text.trim();
  if (t === '' || /^false$/i.test(t)) return false;
  if (/^true$/i.test(t)) return true;
  if (/^\d{1,6}$/.test(t)) return Number(t);
  const list = t.split(',').map((e) => e.trim()).filter(Boolean);
  const bad = list.length ? list.find((e) => !isTrustEntry(e)) : t;
  if (bad !== undefined) throw new Error(`TRUST_PROXY must be empty, true, a number of proxy hops or a comma-separated list of addresses and CIDRs (127.0.0.1,10.0.0.0/8), got "${bad}"`);
  return list;
}

/** An address, `address/bits`, `address/netmask` or a name; written out in full (proxy-addr also reads `127.1`, `1.5`). */
function isTrustEntry(entry: string): boolean {
  if (NAMES.includes(entry)) return true;
  const [address, range, ...more] = entry.split('/');
  if (more.length || !isIP(address) || (range !== undefined && !/^\d{1,3}$/.test(range) && isIP(range) !== 4)) return false;
  try {
    proxyAddr.compile(entry);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the address a request came through at `hop` (0: the connection's, then X-Forwarded-For from its right
 * end) is a trusted proxy: the client is the first address, from the right, that is not. One function for Fastify's
 * `trustProxy` and the ingress fast path, so both read the same client address.
 */
export function trustProxyFunction(trust: TrustProxy): (address: string, hop: number) => boolean {
  if (typeof trust === 'boolean') return () => trust;
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return proxyAddr.compile(trust);
}
