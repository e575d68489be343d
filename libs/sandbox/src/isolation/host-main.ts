/**
 * Entry of a sandbox host process: one per account, started by an app inside
 * the isolation (namespaces, an unprivileged uid, Node's permission model). It
 * runs the tasks the app sends over IPC: on its own thread (SANDBOX_RUN_IN=process)
 * or in a Piscina pool of worker threads (workers). Nothing here trusts the
 * components; the app reads what comes back as untrusted (host-process.ts).
 */
import { Socket } from 'node:net';
import { serialize } from 'node:v8';
import type { ResponseMessage } from '../worker-protocol';
import { WorkerPool } from '../worker-pool';
import { OwnThreadRunner } from './own-thread-runner';
import { HOST_CHANNEL_FD, type FromHost, type HostConfig, type ToHost } from './host-protocol';
import { FrameReader, frameHeader } from './frame-channel';
import { IpcBatch } from './ipc-batch';
import { doneBodies, responseBodies } from './result-bounds';

const config = JSON.parse(process.argv[2] ?? '{}') as HostConfig;
/** The process's own exit: on this thread the component runtime replaces `process.exit` (it throws for component code). */
const exit = process.exit.bind(process);

/** The app's end of the channel (fd 3, a socket pair): framed messages both ways (frame-channel.ts). */
const channel = new Socket({ fd: HOST_CHANNEL_FD, readable: true, writable: true });
/** Frames to the app, as headers and bodies, joined into one write per turn of the event loop. */
const out = new IpcBatch<Buffer>((parts) => {
  if (channel.writable) channel.write(Buffer.concat(parts));
});
/** Sends serialized messages (frame bodies). */
const sendBodies = (bodies: Buffer[]): void => {
  for (const body of bodies) {
    out.push(frameHeader(body.byteLength));
    out.push(body);
  }
};
/** Sends a message of the host's own; one that cannot be encoded (a log line's object) is dropped. */
const send = (m: Exclude<FromHost, { t: 'done' | 'response' }>): void => {
  try {
    sendBodies([serialize(m)]);
  } catch {
    // dropped
  }
};

const logger = {
  info: (obj: object, msg?: string) => send({ t: 'log', level: 'info', obj, msg }),
  warn: (obj: object, msg?: string) => send({ t: 'log', level: 'warn', obj, msg }),
  error: (obj: object, msg?: string) => send({ t: 'log', level: 'error', obj, msg }),
  debug: (obj: object, msg?: string) => send({ t: 'log', level: 'debug', obj, msg }),
};

const pool = config.runIn === 'process' ? new OwnThreadRunner(config) : new WorkerPool({ ...config, logger });

function handle(m: ToHost): void {
  if (m.t === 'run') {
    const onResponse = m.respond
      ? (payload: ResponseMessage) => {
          const bodies = responseBodies(m.id, payload);
          if (bodies) sendBodies(bodies);
        }
      : undefined;
    void pool.run(m.task, m.timeoutMs, onResponse).then((result) => sendBodies(doneBodies(m.id, m.task, result)));
  } else if (m.t === 'close') {
    void pool.close(m.graceMs).then(() => {
      out.flush();
      // Exits once the last answers are written (exiting at once could drop them).
      setTimeout(() => exit(0), 1000).unref();
      channel.end(() => exit(0));
    });
  }
}

// The app is trusted: its frames are bounded only by what the host could ever need.
const reader = new FrameReader(
  () => 0xffffffff,
  (m) => handle(m as ToHost),
  () => exit(1),
);
channel.on('data', (d: Buffer) => reader.push(d));
channel.on('error', () => exit(0));
// The app went away (or closed the channel): nothing left to serve.
channel.on('close', () => exit(0));
send({ t: 'ready' });
out.flush();
