/**
 * Entry of a sandbox host process: one per account, started by an app inside
 * the isolation (namespaces, an unprivileged uid, Node's permission model). It
 * holds the account's Piscina pool and runs the tasks the app sends over IPC.
 * Nothing here trusts the components: they run in the pool's worker threads.
 */
import { Socket } from 'node:net';
import type { ResponseMessage } from '../worker-protocol';
import { sandboxError, WorkerPool } from '../worker-pool';
import { HOST_CHANNEL_FD, type FromHost, type HostConfig, type ToHost } from './host-protocol';
import { encodeFrame, FrameReader } from './frame-channel';
import { IpcBatch } from './ipc-batch';
import { boundedOutcome, responseFits } from './result-bounds';

const config = JSON.parse(process.argv[2] ?? '{}') as HostConfig;

/** The app's end of the channel (fd 3, a socket pair): framed messages both ways (frame-channel.ts). */
const channel = new Socket({ fd: HOST_CHANNEL_FD, readable: true, writable: true });
const out = new IpcBatch<Buffer>((frames) => {
  if (channel.writable) channel.write(Buffer.concat(frames));
});
/** Encodes a message at once (one that cannot be encoded never reaches a batch: an answer then fails, a log line is dropped). */
const send = (m: FromHost): void => {
  try {
    out.push(encodeFrame(m));
  } catch (e) {
    if (m.t === 'done') out.push(encodeFrame({ t: 'done', id: m.id, out: { failed: sandboxError('ResultSizeLimitError', `the answer cannot be sent back: ${(e as Error).message}`) } }));
  }
};

const logger = {
  info: (obj: object, msg?: string) => send({ t: 'log', level: 'info', obj, msg }),
  warn: (obj: object, msg?: string) => send({ t: 'log', level: 'warn', obj, msg }),
  error: (obj: object, msg?: string) => send({ t: 'log', level: 'error', obj, msg }),
  debug: (obj: object, msg?: string) => send({ t: 'log', level: 'debug', obj, msg }),
};

const pool = new WorkerPool({ ...config, logger });

function handle(m: ToHost): void {
  if (m.t === 'run') {
    const onResponse = m.respond ? (payload: ResponseMessage) => responseFits(payload) && send({ t: 'response', id: m.id, payload }) : undefined;
    void pool.run(m.task, m.timeoutMs, onResponse).then((result) => send({ t: 'done', id: m.id, out: boundedOutcome(m.task, result) }));
  } else if (m.t === 'close') {
    void pool.close(m.graceMs).then(() => {
      out.flush();
      // Exits once the last answers are written (exiting at once could drop them).
      setTimeout(() => process.exit(0), 1000).unref();
      channel.end(() => process.exit(0));
    });
  }
}

// The app is trusted: its frames are bounded only by what the host could ever need.
const reader = new FrameReader(
  () => 0xffffffff,
  (m) => handle(m as ToHost),
  () => process.exit(1),
);
channel.on('data', (d: Buffer) => reader.push(d));
channel.on('error', () => process.exit(0));
// The app went away (or closed the channel): nothing left to serve.
channel.on('close', () => process.exit(0));
send({ t: 'ready' });
out.flush();
