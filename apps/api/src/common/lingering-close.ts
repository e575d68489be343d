import type { Socket } from 'node:net';

/** How long a connection answered before its body was read keeps reading (and dropping) what its client still sends. */
export const LINGER_MS = 2000;

/**
 * Closes `socket` in stages once the answer in flight is written (RFC 9112 §9.6, "lingering close"), instead of at once.
 * An answer sent before the request's body was read (a 401 for a key that is none) is followed by a close; closed at
 * once while the client was still sending its body, the connection was reset, and a client whose write then failed
 * (EPIPE) lost the answer it had already received (1 of 100 such clients, on a loaded machine). Now the answer goes
 * out with the end of the api's side (FIN), what the client still sends is read and dropped (through the request, which
 * Node dumps), and the socket is destroyed when the client ends its side or after LINGER_MS: the body is never kept.
 */
export function closeLingering(socket: Socket): void {
  socket.destroySoon = function lingering(this: Socket): void {
    this.end();
    const done = (): void => {
      clearTimeout(timer);
      this.destroy();
    };
    const timer = setTimeout(done, LINGER_MS);
    timer.unref();
    this.once('end', done);
    this.once('close', () => clearTimeout(timer));
  };
}
