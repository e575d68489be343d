import type { ExecuteBatchOutcome, ExecuteBatchTask, ExecuteResult, ExecuteTask, SandboxPool } from '@app/sandbox';
import type { ExecuteResponse } from './executor.port';

type Pool = Pick<SandboxPool, 'execute' | 'executeBatch' | 'executeBatches'>;

interface Waiting {
  task: ExecuteBatchTask;
  onResponse?: (index: number, response: ExecuteResponse) => void;
  /** Runs it as a task of its own, as without combining. */
  alone: () => void;
  settle: (results: ExecuteResult[]) => void;
}

/**
 * Runs of `run` of different sources of one account running the same code, asked for in the same turn of the event
 * loop (the invocations of one fetch from a partition, say), go to the account's sandbox as one task: each source's
 * invocations one after the other as before, the sources side by side (libs/sandbox executeBatches), up to `maxItems`
 * invocations a task. Each source keeps its own db, dedupe, errors and `respond()`; a task that fails as a whole (its
 * sandbox died) runs each source's part again as a task of its own, so that only the culprit fails.
 */
export class RunCombiner {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  /** `onTask(sources)`: a task went to the sandbox with the runs of this many sources. */
  constructor(
    private readonly pool: Pool,
    private readonly maxItems: number,
    private readonly onTask: (sources: number) => void = () => undefined,
  ) {}

  execute(task: ExecuteTask, opts: { onResponse?: (response: ExecuteResponse) => void }): Promise<ExecuteResult> {
    if (task.method !== 'run' || task.steps || task.responded) return this.pool.execute(task, opts);
    const { kind: _kind, method: _method, invocationId, event, ...shared } = task;
    const { onResponse } = opts;
    return new Promise((resolve) =>
      this.add({
        task: { ...shared, kind: 'executeBatch', items: [{ invocationId, event }] },
        onResponse: onResponse && ((_, r) => onResponse(r)),
        alone: () => resolve(this.pool.execute(task, opts)),
        settle: ([result]) => resolve(result),
      }),
    );
  }

  executeBatch(task: ExecuteBatchTask, opts: { onResponse?: (index: number, response: ExecuteResponse) => void }): Promise<ExecuteBatchOutcome> {
    return new Promise((resolve) => this.add({ task, onResponse: opts.onResponse, alone: () => resolve(this.pool.executeBatch(task, opts)), settle: (results) => resolve({ results }) }));
  }

  private add(w: Waiting): void {
    const { account = '', codeHash, dependencyVersions } = w.task;
    const key = `${account}\n${codeHash}\n${dependencyVersions ? JSON.stringify(dependencyVersions) : ''}`;
    const list = this.waiting.get(key);
    if (list) list.push(w);
    else this.waiting.set(key, [w]);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const groups = [...this.waiting.values()];
    this.waiting.clear();
    for (const group of groups) for (const task of this.split(group)) this.run(task);
  }

  /** A group's runs as tasks of at most `maxItems` invocations (a source's batch is never split). */
  private split(group: Waiting[]): Waiting[][] {
    const tasks: Waiting[][] = [];
    let items = Infinity;
    for (const w of group) {
      const n = w.task.items.length;
      if (items + n > this.maxItems) {
        tasks.push([]);
        items = 0;
      }
      tasks[tasks.length - 1].push(w);
      items += n;
    }
    return tasks;
  }

  private run(task: Waiting[]): void {
    this.onTask(task.length);
    if (task.length === 1) return task[0].alone();
    const onResponse = task.some((w) => w.onResponse) ? (b: number, i: number, r: ExecuteResponse) => task[b].onResponse?.(i, r) : undefined;
    this.pool.executeBatches(task.map((w) => w.task), { onResponse }).then(
      (out) => {
        if ('failed' in out) for (const w of task) w.alone();
        else out.results.forEach((results, b) => task[b].settle(results));
      },
      () => task.forEach((w) => w.alone()),
    );
  }
}
