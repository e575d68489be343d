import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { clientNetwork } from './client-network';
import { rawJsonAnswer } from './raw-json-answers';

/** File descriptors left to the api's own connections and files when HTTP_MAX_CONNECTIONS is derived. */
const FD_RESERVE = 1_024;

export interface ConnectionBoundsOptions {
  /** HTTP_MAX_CONNECTIONS_PER_ADDRESS (0: none). */
  perAddress: number;
  /** HTTP_MAX_CONNECTIONS (0: the open-file limit less FD_RESERVE, where it can be read). */
  total: number;
  /** Whether a connection's address is a proxy TRUST_PROXY names (its connections are its clients'). */
  trusted: (address: string) => boolean;
}

/** The soft limit of open files of this process (Linux's /proc), or undefined. */
export function openFileLimit(limits = (): string => readFileSync('/proc/self/limits', 'utf8')): number | undefined {
  try {
    const soft = /^Max open files\s+(\d+)/m.exec(limits())?.[1];
    return soft ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/** HTTP_MAX_CONNECTIONS as set, or derived from the open-file limit; undefined: no bound. */
export function totalConnectionBound(total: number, fileLimit: number | undefined): number | undefined {
  if (total > 0) return total;
  return fileLimit !== undefined && fileLimit > 2 * FD_RESERVE ? fileLimit - FD_RESERVE : undefined;
}

/** The answer of a connection over its address's bound, written before any request is read. */
function refusal(limit: number): string {
  const body = { error: `too many connections from this address (at most ${limit} at once): retry later`, code: 'unavailable', details: { max_connections: limit, retry_after_seconds: 1 } };
  return rawJsonAnswer(503, 'Service Unavailable', body, { 'retry-after': '1' });
}

/**
 * Bounds the api's client connections: in all (Node's `maxConnections`: a connection past it is closed at once), and
 * per client address (the connection's own: a client writes X-Forwarded-For itself; an IPv6 one by its /64,
 * clientNetwork), so that one client's idle or unfinished connections cannot hold the file descriptors every other
 * client, and the api's own connections, need.
 */
export function boundConnections(server: Server, opts: ConnectionBoundsOptions): void {
  const total = totalConnectionBound(opts.total, openFileLimit());
  if (total !== undefined) server.maxConnections = total;
  if (opts.perAddress <= 0) return;
  const open = new Map<string, number>();
  // In front of the HTTP server's own listener, so that a refused connection never has a request of it read.
  const serve = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const remote = socket.remoteAddress;
    if (remote && !opts.trusted(remote)) {
      const address = clientNetwork(remote);
      const n = (open.get(address) ?? 0) + 1;
      if (n > opts.perAddress) {
        socket.on('error', () => undefined);
        // What the client sends is read and dropped (unread, it could turn the close into a reset before the answer).
        socket.resume();
        socket.end(refusal(opts.perAddress));
        // Destroyed if the client does not close its side.
        setTimeout(() => socket.destroy(), 1_000).unref();
        return;
      }
      open.set(address, n);
      socket.once('close', () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left > 0) open.set(address, left);
        else open.delete(address);
      });
    }
    for (const listener of serve) listener.call(server, socket);
  });
}
