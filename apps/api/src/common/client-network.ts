import { isIPv4, isIPv6 } from 'node:net';

/** The eight 16-bit groups of a valid IPv6 address (an embedded IPv4 tail as two), or undefined. */
function groupsOf(address: string): number[] | undefined {
  const [head, tail] = address.split('::');
  const part = (s: string): string[] => (s ? s.split(':') : []);
  const expand = (words: string[]): number[] =>
    words.flatMap((w) => {
      if (!w.includes('.')) return [parseInt(w, 16)];
      const b = w.split('.').map(Number);
      return [b[0] * 256 + b[1], b[2] * 256 + b[3]];
    });
  const front = expand(part(head));
  const back = tail === undefined ? [] : expand(part(tail));
  const groups = tail === undefined ? front : [...front, ...Array(8 - front.length - back.length).fill(0), ...back];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * The client a connection's address stands for, where what one client may hold is bounded (connections, request bodies,
 * keyless requests): an IPv4 address as it is (an IPv4-mapped IPv6 address as its IPv4), an IPv6 address by its /64.
 * A host is given a whole /64, and chooses any of its 2^64 addresses for each connection: bounded per address, one
 * IPv6 client had no bound at all.
 */
export function clientNetwork(address: string): string {
  const bare = address.split('%')[0];
  if (isIPv4(bare) || !isIPv6(bare)) return bare;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1];
  const groups = groupsOf(bare);
  return groups ? `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64` : bare;
}
