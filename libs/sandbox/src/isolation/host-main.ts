/**
 * Entry of a sandbox host process: one per account, started by an app inside
 * the isolation (namespaces, an unprivileged uid, Node's permission model). It
 * holds the account's Piscina pool and runs the tasks the app sends over IPC.
 * Nothing here trusts the components: they run in the pool's worker threads.
 */
import type { ResponseMessage } from '../worker-protocol';
import { WorkerPool } from '../worker-pool';
import type { FromHost, HostConfig, ToHost } from './host-protocol';
import { IpcBatch } from './ipc-batch';
import { boundedOutcome, responseFits } from './result-bounds';

const config = JSON.parse(process.argv[2] ?? '{}') as HostConfig;

const out = new IpcBatch<FromHost>((batch) => {
  if (process.connected) process.send?.(batch);
});
const send = (m: FromHost): void => out.push(m);

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
      process.exit(0);
    });
  }
}

process.on('message', (batch: ToHost[]) => batch.forEach(handle));
// The app went away (or closed the channel): nothing left to serve.
process.on('disconnect', () => process.exit(0));
send({ t: 'ready' });
out.flush();
