import { networkInterfaces } from 'node:os';

/** A non-loopback IPv4 address of this machine: what a host's public or container address is to the platform. */
export function interfaceAddress(): string {
  const found = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .find((a) => a.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('this machine has no non-loopback IPv4 interface to test with');
  return found.address;
}
