import { AppConfig, createLogger } from '@app/config';
import { SandboxPool } from '@app/sandbox';
import { ComponentReader, DescribeOutput, OptionsInput, OptionsOutput } from './component-reader';

/** Worker threads the api keeps for reading components (the runner has its own pool for running them). */
const API_SANDBOX_THREADS = 2;

/**
 * Reads components in the sandbox's Piscina pool: never on the api's main
 * thread, with a timeout, a heap cap and an empty environment. npm imports are
 * installed into the same cache the runner uses.
 */
export class SandboxComponentReader implements ComponentReader {
  private readonly pool: SandboxPool;

  constructor(config: AppConfig) {
    this.pool = new SandboxPool({
      threads: API_SANDBOX_THREADS,
      heapMb: config.workerHeapMb,
      npmCacheDir: config.npmCacheDir,
      npmRegistry: config.npmRegistry,
      logger: createLogger('api-sandbox', config.logLevel),
    });
  }

  async describe(code: string, timeoutMs: number): Promise<DescribeOutput> {
    const out = await this.pool.describe(code, { timeoutMs });
    return { descriptor: out.descriptor, error: out.error, dependencyVersions: out.dependencyVersions };
  }

  options(code: string, propName: string, input: OptionsInput, timeoutMs: number): Promise<OptionsOutput> {
    return this.pool.options(code, propName, input, timeoutMs);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
