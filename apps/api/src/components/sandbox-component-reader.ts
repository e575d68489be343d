import type { ConfigurableProp } from '@app/component-model';
import { AppConfig, createLogger } from '@app/config';
import { BadRequestError, ServiceUnavailableError } from '@app/contracts';
import { CANCELLED, createSandboxPool, type Isolation, SandboxPool } from '@app/sandbox';
import { clientGoneSignal } from '../common/client-gone';
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
  /** Aborted when the api starts shutting down: reads not started yet never start, running ones are cancelled. */
  private readonly shutdown = new AbortController();

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
    const out = this.checked(await this.pool.describe(code, { timeoutMs, account, admitInstall, signal: this.signal() }));
    return { descriptor: out.descriptor, error: out.error, dependencyVersions: out.dependencyVersions };
  }

  async options(code: string, propName: string, input: OptionsInput, timeoutMs: number, account: string): Promise<OptionsOutput> {
    return this.checked(await this.pool.options(code, propName, input, timeoutMs, account, this.signal()));
  }

  async additionalProps(code: string, configuredProps: Record<string, unknown>, timeoutMs: number, account: string, previousProps: ConfigurableProp[] = []): Promise<AdditionalPropsOutput> {
    return this.checked(await this.pool.additionalProps(code, configuredProps, timeoutMs, account, previousProps, this.signal()));
  }

  refuseReads(): void {
    this.shutdown.abort();
  }

  /** What cancels a read: its client going away (clientGoneSignal), or the api shutting down. */
  private signal(): AbortSignal {
    const client = clientGoneSignal();
    return client ? AbortSignal.any([client, this.shutdown.signal]) : this.shutdown.signal;
  }

  /** A cancelled read is no answer about the code: a 503 while the api shuts down, else its client is gone (nobody reads the 400). */
  private checked<T extends { error?: { name: string } }>(out: T): T {
    if (out.error?.name !== CANCELLED) return out;
    if (this.shutdown.signal.aborted) throw new ServiceUnavailableError('the api is shutting down: retry in a moment (another replica may answer at once)');
    throw new BadRequestError('the client went away before its request was answered: its component read was cancelled', undefined, 'invalid_request');
  }

  restartSandboxes(accounts: readonly string[]): void {
    this.pool.restartSandboxes(accounts);
  }

  retireSandboxes(accounts: readonly string[]): void {
    this.pool.retireSandboxes(accounts);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
