import type { DescribeResult, ExecuteBatchOutcome, ExecuteBatchTask, ExecuteResult, ExecuteTask } from '@app/sandbox';

export type ExecuteResponse = NonNullable<ExecuteResult['response']>;

/**
 * What the runner needs from the sandbox: run one method of a component in a
 * worker, and read a component's descriptor. The Piscina-backed `SandboxPool`
 * of libs/sandbox implements it; unit tests use fakes.
 */
export interface Executor {
  execute(task: ExecuteTask, opts: { onResponse?: (response: ExecuteResponse) => void }): Promise<ExecuteResult>;
  /** Runs several invocations of one source's `run` as one sandbox task (an executor without it runs them one at a time). */
  executeBatch?(task: ExecuteBatchTask, opts: { onResponse?: (index: number, response: ExecuteResponse) => void }): Promise<ExecuteBatchOutcome>;
  /** Reads a component in `account`'s sandbox. */
  describe(code: string, account: string): Promise<DescribeResult>;
  /** The isolation component code runs under (for the start line and /healthz). */
  readonly isolation?: { mode: string; summary: string };
  /** Restarts these accounts' sandbox processes: their access changed. Returns how many were stopped. */
  restartSandboxes?(accounts: readonly string[]): number;
  /** Retires these accounts' sandbox processes: a source or workflow of theirs was deleted. Returns how many were retired. */
  retireSandboxes?(accounts: readonly string[]): number;
  /** Sandbox processes running and tasks in them (for metrics). */
  stats?(): { sandboxes?: number; queueSize: number };
  close(): Promise<void>;
}

export const EXECUTOR = Symbol('EXECUTOR');
