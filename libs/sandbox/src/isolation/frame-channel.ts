import { deserialize, serialize } from 'node:v8';
import { unfoldingBudget, unfoldsWithin } from './unfolding';

/**
 * The channel between an app and one account's sandbox host: length-prefixed
 * frames (4-byte big-endian length, then one message as `v8.serialize` writes
 * it) over a socket pair (the child's fd 3).
 *
 * Not Node's own IPC channel: every thread of the host process can write to the
 * host's end of it (Node's permission model does not check operations on an
 * open descriptor, so component code in a worker thread can `fs.writeSync(3, …)`),
 * and Node's IPC reader buffers whatever length a frame announces — 100 bytes of
 * component code announced 4 GiB and the runner died of it. So the app reads the
 * sandbox's frames as untrusted input: a frame longer than the reader's bound,
 * or one that does not deserialize, is a protocol violation (the app stops that
 * sandbox), and nothing is buffered beyond the bound.
 */
export const FRAME_HEADER_BYTES = 4;

/** The header of a frame whose body (one serialized message) is `bodyBytes` long. */
export function frameHeader(bodyBytes: number): Buffer {
  const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  head.writeUInt32BE(bodyBytes, 0);
  return head;
}

/** One message as a frame. */
export function encodeFrame(message: unknown): Buffer {
  const body = serialize(message);
  return Buffer.concat([frameHeader(body.byteLength), body]);
}

/** Messages as frames, one after the other in one buffer (one write). */
export function encodeFrames(messages: readonly unknown[]): Buffer {
  return Buffer.concat(messages.map(encodeFrame));
}

export class FrameError extends Error {
  override name = 'SandboxProtocolError';
}

/** How a reader hands its thread back between frames: after `afterMs` of reading, `pause` is given the rest to do later. */
export interface FrameYield {
  afterMs: number;
  /** `waitMs`: how long to wait before reading on (0: the next turn of the event loop). */
  pause: (resume: () => void, waitMs: number) => void;
  /** After each message: how long the reader must wait before the next one (a budget of messages), 0 to read on. */
  waitMs?: () => number;
}

/**
 * Splits a byte stream into messages. `maxBytes` bounds every frame (and so
 * what the reader holds): a longer one is refused as soon as its header is
 * read. After an error the reader ignores the rest of the stream. With
 * `yielding`, frames that arrived together are read in turns of the event loop
 * (each `v8.deserialize` is one synchronous step; frame-pieces.ts).
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = -1;
  private failed = false;

  constructor(
    private readonly maxBytes: () => number,
    private readonly onMessage: (message: unknown, bytes: number) => void,
    private readonly onError: (e: FrameError) => void,
    /** Untrusted frames: a message that unfolds far beyond its frame (shared references, see unfolding.ts) is refused. */
    private readonly bounded = false,
    private readonly yielding?: FrameYield,
  ) {}

  /** Frames are waiting to be read in a later turn (`yielding`). */
  waiting = false;

  push(chunk: Buffer): void {
    if (this.failed) return;
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
    if (!this.waiting) this.read();
  }

  private read(): void {
    const started = this.yielding ? performance.now() : 0;
    while (!this.failed) {
      if (this.need < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) return;
        const length = this.take(FRAME_HEADER_BYTES).readUInt32BE(0);
        const max = this.maxBytes();
        if (length > max) return this.fail(`the sandbox sent a message of ${length} bytes, over the ${max} bytes it may send`);
        this.need = length;
      }
      if (this.buffered < this.need) return;
      const body = this.take(this.need);
      const bytes = this.need;
      this.need = -1;
      let message: unknown;
      try {
        message = deserialize(body);
      } catch (e) {
        return this.fail(`the sandbox sent a message that does not deserialize (${(e as Error).message})`);
      }
      if (this.bounded && !unfoldsWithin(message, unfoldingBudget(bytes))) {
        return this.fail(`the sandbox sent a message of ${bytes} bytes that unfolds to more than ${unfoldingBudget(bytes)} values and characters (shared references)`);
      }
      this.onMessage(message, bytes);
      if (!this.yielding || this.failed) continue;
      const waitMs = this.yielding.waitMs?.() ?? 0;
      if (waitMs > 0 || (this.buffered >= FRAME_HEADER_BYTES && performance.now() - started >= this.yielding.afterMs)) {
        this.waiting = true;
        return this.yielding.pause(() => {
          this.waiting = false;
          this.read();
        }, waitMs);
      }
    }
  }

  private fail(why: string): void {
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
    this.onError(new FrameError(why));
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.byteLength ? [rest] : [];
    this.buffered = rest.byteLength;
    return out;
  }
}
