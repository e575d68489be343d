import type { Logger } from 'pino';
import type { AppConfig } from '@app/config';
import { createSandboxPool, DescribeResult, ExecuteBatchOutcome, ExecuteBatchTask, ExecuteResult, ExecuteTask, type Isolation, SandboxPool } from '@app/sandbox';
import { availableParallelism } from 'node:os';
import { Histogram, type Registry } from 'prom-client';
import type { ExecuteResponse, Executor } from './executor.port';
import { RunCombiner } from './run-combiner';

/** The runner's executor: libs/sandbox, isolated per account as SANDBOX_ISOLATION says, sized and capped from the config. */
export class SandboxExecutor implements Executor {
  /** Runs of different sources of one account asked for at the same moment, as one task (RUN_BATCH_ACROSS_SOURCES). */
  private readonly combiner: RunCombiner | undefined;

  private constructor(
    private readonly config: AppConfig,
    private readonly pool: SandboxPool,
    readonly isolation: Isolation,
    registry?: Registry,
  ) {
    if (!config.runBatchAcrossSources) return;
    const sources = registry && new Histogram({ name: 'runner_run_task_sources', help: 'Sources whose runs went to the sandbox as one task (RUN_BATCH_ACROSS_SOURCES)', buckets: [1, 2, 4, 8, 16, 32, 64], registers: [registry] });
    this.combiner = new RunCombiner(pool, config.runBatchMaxInvocations, (n) => sources?.observe(n));
  }

  /** `readPauseMs`: how long an account's sandbox answers wait before they are read (see SandboxIsolationOptions). */
  static async create(config: AppConfig, logger: Logger, readPauseMs?: (account: string) => number, registry?: Registry): Promise<SandboxExecutor> {
    const { pool, isolation } = await createSandboxPool(config, { threads: config.workerThreads || availableParallelism(), logger: logger.child({ component: 'sandbox' }), readPauseMs });
    return new SandboxExecutor(config, pool, isolation, registry);
  }

  execute(task: ExecuteTask, opts: { onResponse?: (response: ExecuteResponse) => void }): Promise<ExecuteResult> {
    return (this.combiner ?? this.pool).execute(task, opts);
  }

  executeBatch(task: ExecuteBatchTask, opts: { onResponse?: (index: number, response: ExecuteResponse) => void }): Promise<ExecuteBatchOutcome> {
    return (this.combiner ?? this.pool).executeBatch(task, opts);
  }

  /** Reading a component may install its npm dependencies: it gets the operator's run-timeout cap. */
  describe(code: string, account: string): Promise<DescribeResult> {
    return this.pool.describe(code, { timeoutMs: this.config.maxRunTimeoutMs, account });
  }

  restartSandboxes(accounts: readonly string[]): number {
    return this.pool.restartSandboxes(accounts);
  }

  retireSandboxes(accounts: readonly string[]): number {
    return this.pool.retireSandboxes(accounts);
  }

  stats(): ReturnType<SandboxPool['stats']> {
    return this.pool.stats();
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
