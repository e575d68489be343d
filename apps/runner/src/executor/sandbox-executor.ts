import type { Logger } from 'pino';
import type { AppConfig } from '@app/config';
import { createSandboxPool, DescribeResult, ExecuteBatchOutcome, ExecuteBatchTask, ExecuteResult, ExecuteTask, type Isolation, SandboxPool } from '@app/sandbox';
import { availableParallelism } from 'node:os';
import type { ExecuteResponse, Executor } from './executor.port';

/** The runner's executor: libs/sandbox, isolated per account as SANDBOX_ISOLATION says, sized and capped from the config. */
export class SandboxExecutor implements Executor {
  private constructor(
    private readonly config: AppConfig,
    private readonly pool: SandboxPool,
    readonly isolation: Isolation,
  ) {}

  /** `readPauseMs`: how long an account's sandbox answers wait before they are read (see SandboxIsolationOptions). */
  static async create(config: AppConfig, logger: Logger, readPauseMs?: (account: string) => number): Promise<SandboxExecutor> {
    const { pool, isolation } = await createSandboxPool(config, { threads: config.workerThreads || availableParallelism(), logger: logger.child({ component: 'sandbox' }), readPauseMs });
    return new SandboxExecutor(config, pool, isolation);
  }

  execute(task: ExecuteTask, opts: { onResponse?: (response: ExecuteResponse) => void }): Promise<ExecuteResult> {
    return this.pool.execute(task, opts);
  }

  executeBatch(task: ExecuteBatchTask, opts: { onResponse?: (index: number, response: ExecuteResponse) => void }): Promise<ExecuteBatchOutcome> {
    return this.pool.executeBatch(task, opts);
  }

  /** Reading a component may install its npm dependencies: it gets the operator's run-timeout cap. */
  describe(code: string, account: string): Promise<DescribeResult> {
    return this.pool.describe(code, { timeoutMs: this.config.maxRunTimeoutMs, account });
  }

  restartSandboxes(accounts: readonly string[]): number {
    return this.pool.restartSandboxes(accounts);
  }

  stats(): ReturnType<SandboxPool['stats']> {
    return this.pool.stats();
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
