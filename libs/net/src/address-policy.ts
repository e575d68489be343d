import { BlockList, isIP } from 'node:net';

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
privateRanges.addSubnet('fc00::', 7, 'ipv6');

const unspecified = new BlockList();
unspecified.addSubnet('0.0.0.0', 8, 'ipv4');
unspecified.addAddress('::', 'ipv6');

const multicast = new BlockList();
multicast.addSubnet('224.0.0.0', 4, 'ipv4');
multicast.addSubnet('ff00::', 8, 'ipv6');

const reserved = new BlockList();
reserved.addSubnet('240.0.0.0', 4, 'ipv4');
reserved.addAddress('255.255.255.255', 'ipv4');

/** Unwraps IPv4-mapped IPv6 (`::ffff:10.0.0.1`) so it is judged as the IPv4 address it is. */
function normalise(ip: string): [string, 'ipv4' | 'ipv6'] | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return [mapped[1], 'ipv4'];
  const v = isIP(ip);
  if (v === 4) return [ip, 'ipv4'];
  if (v === 6) return [ip, 'ipv6'];
  return undefined;
}

export function classifyAddress(ip: string): AddressClass {
  const n = normalise(ip);
  if (!n) return 'invalid';
  const [addr, family] = n;
  if (always.check(addr, family)) return 'metadata';
  if (linkLocal.check(addr, family)) return 'link-local';
  if (loopback.check(addr, family)) return 'loopback';
  if (privateRanges.check(addr, family)) return 'private';
  if (unspecified.check(addr, family)) return 'unspecified';
  if (multicast.check(addr, family)) return 'multicast';
  if (reserved.check(addr, family)) return 'reserved';
  return 'public';
}

/** Why an address is refused under a policy, or undefined when it is allowed. */
export function refusalReason(ip: string, policy: AddressPolicy): string | undefined {
  const cls = classifyAddress(ip);
  switch (cls) {
    case 'public':
      return undefined;
    case 'loopback':
      return policy.allowLoopback ? undefined : `${ip} is a loopback address (allowed only with ALLOW_LOOPBACK=true)`;
    case 'private':
      return policy.allowPrivate ? undefined : `${ip} is a private address (allowed only with ALLOW_PRIVATE_ADDRESSES=true)`;
    case 'metadata':
      return `${ip} is a cloud metadata address and is always refused`;
    case 'link-local':
      return `${ip} is a link-local address and is always refused`;
    default:
      return `${ip} is a ${cls} address and is always refused`;
  }
}

/** The policy an app's settings (ALLOW_LOOPBACK, ALLOW_PRIVATE_ADDRESSES) describe. */
export function policyFromConfig(config: { allowLoopback: boolean; allowPrivateAddresses: boolean }): AddressPolicy {
  return { allowLoopback: config.allowLoopback, allowPrivate: config.allowPrivateAddresses };
}
