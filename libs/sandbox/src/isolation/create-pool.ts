import { SandboxPool } from '../pool';
import type { FetchText, SandboxLogger } from '../types';
import type { SandboxIsolationOptions } from './isolated-runner';
import { setUpIsolation, type Isolation, type IsolationSettings } from './setup';

export interface PoolSettings extends IsolationSettings {
  workerHeapMb: number;
  workerVmTimeout: string;
  npmCacheDir: string;
  npmRegistry?: string;
  npmInstallMaxMb?: number;
}

/**
 * The sandbox an app runs component code in, isolated as SANDBOX_ISOLATION
 * says (refuses to start when the isolation asked for is not possible here).
 * `threads` sizes the in-process pool of SANDBOX_ISOLATION=none.
 */
export async function createSandboxPool(
  settings: PoolSettings,
  opts: { threads: number; logger: SandboxLogger; fetchText?: FetchText; readPauseMs?: SandboxIsolationOptions['readPauseMs'] },
): Promise<{ pool: SandboxPool; isolation: Isolation }> {
  const isolation = await setUpIsolation(settings);
  const pool = new SandboxPool({
    threads: opts.threads,
    heapMb: settings.workerHeapMb,
    npmCacheDir: settings.npmCacheDir,
    npmRegistry: settings.npmRegistry,
    installMaxBytes: settings.npmInstallMaxMb ? settings.npmInstallMaxMb * 1024 * 1024 : undefined,
    vmTimeout: settings.workerVmTimeout as 'always' | 'adaptive' | 'never',
    logger: opts.logger,
    fetchText: opts.fetchText,
    isolation: isolation.options && opts.readPauseMs ? { ...isolation.options, readPauseMs: opts.readPauseMs } : isolation.options,
  });
  return { pool, isolation };
}
