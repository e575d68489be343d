import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { parseAddressRule, type AddressRule as Rule } from '@app/config';
import { classifyAddress, judgedAddresses, refusalReason, type AddressPolicy } from '@app/net';

/** What code in a sandbox may connect to (TCP), decided per resolved address and port. */
export interface EgressRules {
  /** `allowLoopback` here: whether component code may reach this machine (loopback and its interface addresses). */
  policy: AddressPolicy;
  /** Always allowed (SANDBOX_EGRESS_ALLOW), unless denied. */
  allow: string[];
  /** Always refused (SANDBOX_EGRESS_DENY and the platform's own services). */
  deny: string[];
  /** Why this machine is refused though ALLOW_LOOPBACK=true (TRUST_PROXY believes it: setup.ts), if it is. */
  thisMachineRefused?: string;
}

/**
 * An address matches a rule as written or as the IPv4 address it embeds: through a NAT64 or 6to4 gateway,
 * `64:ff9b::a.b.c.d` and `2002:…` reach a.b.c.d, and the deny list once let them through to a platform service.
 * A NAT64 local-use address is read several ways (address-policy.ts): a deny rule matches when it matches one
 * reading, an allow rule only when it matches every one.
 */
const matches = (rule: Rule, ip: string, port: number, every = false): boolean => {
  if (rule.port !== undefined && rule.port !== port) return false;
  if (rule.list.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6')) return true;
  const judged = judgedAddresses(ip);
  const one = ([addr, family]: [string, 'ipv4' | 'ipv6']): boolean => rule.list.check(addr, family);
  return judged.length > 0 && (every ? judged.every(one) : judged.some(one));
};

/** Every address of this machine (loopback and interfaces): the platform's ports are refused on all of them. */
export function localAddresses(): string[] {
  const out = ['127.0.0.0/8', '::1', '0.0.0.0'];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.push(a.address.split('%')[0]);
  return out;
}

/** Whether an address is this machine's own (loopback, unspecified, an interface's): a service listening on it may answer on all of them. */
export function isLocalAddress(ip: string): boolean {
  return localAddresses().some((a) => matches(parseAddressRule(a), ip, 0));
}

/** Compiled rules: `refuse(ip, port)` says why a connection is refused, or undefined. */
export class EgressJudge {
  private readonly allow: Rule[];
  private readonly deny: Rule[];

  constructor(private readonly rules: EgressRules) {
    this.allow = rules.allow.map(parseAddressRule);
    this.deny = rules.deny.map(parseAddressRule);
  }

  refuse(ip: string, port: number): string | undefined {
    const denied = this.deny.find((r) => matches(r, ip, port));
    if (denied) return `${ip}:${port} is a service of the platform (refused to sandboxed code)`;
    if (this.allow.some((r) => matches(r, ip, port, true))) return undefined;
    // An interface address of this machine is this machine: a service bound to 0.0.0.0 answers there as on
    // 127.0.0.1, however public or private the address looks.
    const cls = classifyAddress(ip);
    if (!this.rules.policy.allowLoopback && (cls === 'loopback' || ((cls === 'public' || cls === 'private') && isLocalAddress(ip)))) {
      const what = cls === 'loopback' ? 'a loopback address' : 'an address of this machine';
      const only = this.rules.thisMachineRefused
        ? `component code does not reach this machine while ${this.rules.thisMachineRefused}: the api would take its X-Forwarded-For for a proxy's`
        : 'component code reaches this machine only with ALLOW_LOOPBACK=true';
      return `${ip} is ${what} (${only}); SANDBOX_EGRESS_ALLOW can allow it`;
    }
    const reason = refusalReason(ip, this.rules.policy);
    return reason ? `${reason}; SANDBOX_EGRESS_ALLOW can allow it` : undefined;
  }
}
