import { BlockList, isIP } from 'node:net';

/** One `ip`, `cidr`, `ip:port` or `cidr:port` entry (IPv6 in brackets when a port follows: `[::1]:5432`). */
export interface AddressRule {
  list: BlockList;
  port?: number;
  text: string;
}

/** An entry of SANDBOX_EGRESS_ALLOW or SANDBOX_EGRESS_DENY (read at load, and by the sandbox's egress rules); throws when it is none. */
export function parseAddressRule(text: string): AddressRule {
  const t = text.trim();
  let addr = t;
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (bracket) {
    addr = bracket[1];
    port = bracket[2] ? Number(bracket[2]) : undefined;
  } else if ((t.match(/:/g) ?? []).length === 1) {
    [addr] = t.split(':');
    port = Number(t.split(':')[1]);
  }
  const [ip, bits] = addr.split('/');
  const family = isIP(ip);
  if (!family || (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))) throw new Error(`"${text}" is not an ip, cidr, ip:port or cidr:port`);
  const list = new BlockList();
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (bits !== undefined) list.addSubnet(ip, /^\d+$/.test(bits) ? Number(bits) : NaN, type);
  else list.addAddress(ip, type);
  return { list, port, text: t };
}
