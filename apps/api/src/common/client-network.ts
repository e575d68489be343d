import { isIPv6 } from 'node:net';
import { ipv6Groups } from '@app/net';

/**
 * The client a connection's address stands for, where what one client may hold is bounded (connections, request bodies,
 * keyless requests): an IPv4 address as it is (an IPv4-mapped IPv6 address as its IPv4), an IPv6 address by its /64.
 * A host is given a whole /64, and chooses any of its 2^64 addresses for each connection: bounded per address, one
 * IPv6 client had no bound at all.
 */
export function clientNetwork(address: string): string {
  const bare = address.split('%')[0];
  if (!isIPv6(bare)) return bare;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1];
  const groups = ipv6Groups(bare);
  return groups ? `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64` : bare;
}
