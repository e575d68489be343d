import type { Socket } from 'node:net';

interface TransportLike {
  socket?: Socket;
  isClosed: boolean;
  send(frame: Uint8Array): void;
}

const CORKED = Symbol('corked');
let installed = false;

/**
 * nats.js writes its pending protocol buffer to the socket once per microtask
 * turn, so a busy process (a publish per HTTP request, an ack per consumed
 * message, each in its own callback) makes one `write` system call per
 * message. This corks the connection's socket at the first write of an event
 * loop turn and uncorks it on `setImmediate`: everything written in that turn
 * leaves in one `writev`. Order is unchanged and the delay is the rest of the
 * current turn. Installed once per process (every NATS connection of it).
 */
export function coalesceNatsWrites(): void {
  if (installed) return;
  installed = true;
  let proto: (TransportLike & { [CORKED]?: boolean }) | undefined;
  try {
    // An internal module of nats.js (the version is pinned in package.json): without it, writes stay uncoalesced.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    proto = (require('nats/lib/src/node_transport') as { NodeTransport?: { prototype: TransportLike & { [CORKED]?: boolean } } }).NodeTransport?.prototype;
  } catch {
    return;
  }
  if (!proto || typeof proto.send !== 'function') return;
  const send = proto.send;
  proto.send = function (this: TransportLike & { [CORKED]?: boolean }, frame: Uint8Array): void {
    const socket = this.socket;
    if (socket && !this.isClosed && !this[CORKED] && !socket.destroyed) {
      this[CORKED] = true;
      socket.cork();
      setImmediate(() => {
        this[CORKED] = false;
        socket.uncork();
      });
    }
    send.call(this, frame);
  };
}
