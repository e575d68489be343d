import type { Logger } from 'pino';
import type { AppConfig } from '@app/config';
import { DescribeResult, ExecuteResult, ExecuteTask, SandboxPool } from '@app/sandbox';
import { availableParallelism } from 'node:os';
import type { ExecuteResponse, Executor } from './executor.port';

/** The runner's executor: libs/sandbox's Piscina pool, sized and capped from the config. */
export class SandboxExecutor implements Executor {
  private readonly pool: SandboxPool;

  constructor(private readonly config: AppConfig, logger: Logger) {
    this.pool = new SandboxPool({
      threads: config.workerThreads || availableParallelism(),
      heapMb: config.workerHeapMb,
      npmCacheDir: config.npmCacheDir,
      npmRegistry: config.npmRegistry,
      vmTimeout: config.workerVmTimeout as 'always' | 'adaptive' | 'never',
      logger: logger.child({ component: 'sandbox' }),
    });
  }

  execute(task: ExecuteTask, opts: { onResponse?: (response: ExecuteResponse) => void }): Promise<ExecuteResult> {
    return this.pool.execute(task, opts);
  }

  /** Reading a component may install its npm dependencies: it gets the operator's run-timeout cap. */
  describe(code: string): Promise<DescribeResult> {
    return this.pool.describe(code, { timeoutMs: this.config.maxRunTimeoutMs });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
