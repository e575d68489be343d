import type { LookupAddress, LookupOptions, promises as dnsPromises } from 'node:dns';
import { isIP, LookupFunction } from 'node:net';
import type { AccountSlots } from './account-slots';
import { AddressPolicy, classifyAddress, isOwnAddress, policyForUrl, refusalReason } from './address-policy';
import { resolveHost } from './resolve-host';

export class OutboundError extends Error {
  constructor(message: string, readonly code: 'blocked' | 'timeout' | 'too_large' | 'bad_url' | 'too_many_redirects' | 'network') {
    super(message);
  }
}

/**
 * Why the platform's own requests (webhooks, workflow sends, component_url) may not connect to
 * `ip`: the address policy, and an address of this machine counts as loopback (a service bound to
 * 0.0.0.0 answers on every interface). Component code's egress keeps its own rules (`@app/sandbox`). `shown` names the
 * destination in the reason (`refusalReason`).
 */
export function outboundRefusal(ip: string, policy: AddressPolicy, shown = ip): string | undefined {
  if (policy.platformPort !== undefined && (classifyAddress(ip) === 'loopback' || isOwnAddress(ip))) {
    return `${shown}:${policy.platformPort} is a port of this platform's own services on this machine (NATS, Postgres, ops ports), refused whatever ALLOW_LOOPBACK says`;
  }
  const reason = ipRefusal(ip, policy, shown);
  if (reason || policy.allowLoopback || !isOwnAddress(ip)) return reason;
  return `${shown} is an address of this machine (allowed only with ALLOW_LOOPBACK=true)`;
}

/** Whose lookups a `guardedLookup` makes. */
export interface LookupScope {
  /** The account (`ResolveOptions.account`); absent, the platform's own. */
  account?: string;
  /** The account's lookups in progress at once: past them a lookup waits for one of its own to end. */
  lookups?: AccountSlots;
  /** The resolver (the specs give their own). */
  resolver?: dnsPromises.Resolver;
}

/**
 * A `dns.lookup` replacement that refuses addresses the policy forbids (checked after resolution). The refusal names
 * the host, not the address it resolved to: a tenant's URL must not read the platform's DNS (an internal name's
 * address in a delivery log or an error). A lookup of a
 * request to one of the platform's ports gets that request's policy (`policyForUrl`): the lookup itself is not told
 * the port.
 */
export function guardedLookup(policy: AddressPolicy, scope: LookupScope = {}): LookupFunction {
  return ((hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    scopedResolve(hostname, scope).then(
      (addresses) => {
        const list = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (!list.length) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        for (const a of list) {
          const reason = outboundRefusal(a.address, policy, hostname);
          if (reason) {
            const e = new OutboundError(`refused to connect to ${hostname}: ${reason}`, 'blocked') as OutboundError & NodeJS.ErrnoException;
            return callback(e, '', 0);
          }
        }
        if (options.all) return callback(null, list);
        callback(null, list[0].address, list[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  }) as LookupFunction;
}

/** resolveHost within the account's lookups at once (waiting for its turn past them: only its own lookups wait). */
async function scopedResolve(hostname: string, { account, lookups, resolver }: LookupScope): Promise<LookupAddress[]> {
  if (!lookups || account === undefined) return resolveHost(hostname, { account, resolver });
  await lookups.wait(account);
  try {
    return await resolveHost(hostname, { account, resolver });
  } finally {
    lookups.release(account);
  }
}

/** Verdicts of the address policy (a webhook sender asks about the same few hosts thousands of times a second). */
const ipVerdicts = new Map<string, string | undefined>();

function ipRefusal(host: string, policy: AddressPolicy, shown: string): string | undefined {
  const key = `${policy.allowLoopback ? 1 : 0}${policy.allowPrivate ? 1 : 0}${host} ${shown}`;
  if (ipVerdicts.has(key)) return ipVerdicts.get(key);
  const reason = refusalReason(host, policy, shown);
  if (ipVerdicts.size >= 10_000) ipVerdicts.clear();
  ipVerdicts.set(key, reason);
  return reason;
}

/**
 * The refusal for a URL whose host is a literal IP address the policy forbids.
 * Literal addresses skip DNS, so the connect-time lookup never sees them: they are checked here, before connecting.
 */
export function literalHostRefusal(url: URL, policy: AddressPolicy): OutboundError | undefined {
  const reason = literalHostReason(url, policy);
  return reason ? new OutboundError(`refused to connect to ${url.hostname.replace(/^\[|\]$/g, '')}: ${reason}`, 'blocked') : undefined;
}

/** Why the policy forbids a URL whose host is a literal IP address (`outboundRefusal`), or undefined: a host name is judged at connect. */
export function literalHostReason(url: URL, policy: AddressPolicy): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) ? outboundRefusal(host, policyForUrl(url, policy)) : undefined;
}
