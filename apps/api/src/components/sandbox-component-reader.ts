import type { ConfigurableProp } from '@app/component-model';
import { AppConfig, createLogger } from '@app/config';
import { createSandboxPool, type Isolation, SandboxPool } from '@app/sandbox';
import { AdditionalPropsOutput, ComponentReader, DescribeOutput, OptionsInput, OptionsOutput } from './component-reader';
import { InstallBudget } from './install-budget';
import { REGISTRY_OWNER } from './components.service';

/** Worker threads the api keeps for reading components with SANDBOX_ISOLATION=none (the runner has its own pool for running them). */
const API_SANDBOX_THREADS = 2;

/**
 * Reads components in the sandbox: in the calling account's own sandbox
 * process (never in the api's process), with a timeout, memory caps and an
 * empty environment. npm imports are installed into the same cache the runner uses.
 */
export class SandboxComponentReader implements ComponentReader {
  private constructor(
    private readonly pool: SandboxPool,
    readonly isolation: Isolation,
    private readonly installs: InstallBudget,
  ) {}

  static async create(config: AppConfig): Promise<SandboxComponentReader> {
    const { pool, isolation } = await createSandboxPool(config, { threads: API_SANDBOX_THREADS, logger: createLogger('api-sandbox', config.logLevel) });
    return new SandboxComponentReader(pool, isolation, new InstallBudget(config.npmInstallsPerDayPerAccount));
  }

  /** New npm dependency sets count against the account's install budget (a saved component's later reads find them installed). */
  async describe(code: string, timeoutMs: number, account: string): Promise<DescribeOutput> {
    // The registry is published by the operator (admin CLI, the seed at start): not a tenant's budget.
    const admitInstall = account === REGISTRY_OWNER ? undefined : () => this.installs.admit(account);
    const out = await this.pool.describe(code, { timeoutMs, account, admitInstall });
    return { descriptor: out.descriptor, error: out.error, dependencyVersions: out.dependencyVersions };
  }

  options(code: string, propName: string, input: OptionsInput, timeoutMs: number, account: string): Promise<OptionsOutput> {
    return this.pool.options(code, propName, input, timeoutMs, account);
  }

  additionalProps(code: string, configuredProps: Record<string, unknown>, timeoutMs: number, account: string, previousProps: ConfigurableProp[] = []): Promise<AdditionalPropsOutput> {
    return this.pool.additionalProps(code, configuredProps, timeoutMs, account, previousProps);
  }

  restartSandboxes(accounts: readonly string[]): void {
    this.pool.restartSandboxes(accounts);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
