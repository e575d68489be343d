import { access } from 'node:fs';
import { sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import { startRuntime, type TaskHandler } from '../worker/runtime';
import type { ResponsePort } from '../worker/services';
import type { HostConfig } from './host-protocol';

/**
 * Runs an account's tasks on its sandbox process's own thread (SANDBOX_RUN_IN=process), several in flight at once:
 * no hand-over to a worker thread and back, the largest part of a small task's cost. A run's deadlines are the
 * runtime's own (its awaits, and with a guard its synchronous parts); a run that blocks the thread past its deadline
 * is stopped by the app, which stops this process (host-process.ts).
 */
export class OwnThreadRunner {
  private readonly handle: TaskHandler;
  private inFlight = 0;
  private drained?: () => void;

  constructor(config: Pick<HostConfig, 'platformRequireFrom' | 'vmTimeout' | 'heapMb' | 'egressSocket'>) {
    // Component code sees the environment a worker thread of the pool gives it: none (the process's own
    // variables, read at its start, are not component code's business). libuv's thread pool reads UV_THREADPOOL_SIZE
    // (sandbox-command.ts) when it first gets work: it gets some before the variables go.
    access('/tmp', () => undefined);
    for (const key of Object.keys(process.env)) delete process.env[key];
    this.handle = startRuntime(config);
  }

  async run(task: WorkerTask, _timeoutMs: number, onResponse?: (r: ResponseMessage) => void): Promise<TaskOutcome<unknown>> {
    if (onResponse && (task.kind === 'execute' || task.kind === 'executeBatch')) {
      const port: ResponsePort = { postMessage: (payload) => onResponse(payload as ResponseMessage), close: () => undefined };
      task.port = port as unknown as typeof task.port;
    }
    this.inFlight++;
    try {
      return { value: await this.handle(task) };
    } catch (e) {
      const what = task.kind === 'execute' ? task.method : task.kind === 'executeBatch' ? 'run' : task.kind;
      return { failed: sandboxError('WorkerError', `${what} failed in the sandbox: ${(e as Error)?.message ?? String(e)}`) };
    } finally {
      if (--this.inFlight === 0) this.drained?.();
    }
  }

  /** Resolves once the tasks in flight are done, or after `graceMs`. */
  close(graceMs: number): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      this.drained = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
