import type { Subscription } from 'nats';
import { readRestartSandboxes } from '@app/contracts';
import type { Logger } from '@app/config';
import type { NatsService } from '@app/nats';
import type { Executor } from '../executor/executor.port';
import type { RunnerMetrics } from './runner-metrics';

/** Change ids remembered: every api replica passes each change on, and a runner restarts once. */
const SEEN_MAX = 1000;

/**
 * Hears `ctl.restart-sandboxes` (every api replica publishes one per access change: a member removed, keys revoked
 * or rotated) and restarts those accounts' sandbox processes on this replica: code a removed member left running
 * there (a patched global, a timer) does not see the account's later runs. Runs in flight run again on the new
 * process (libs/sandbox, IsolatedRunner.restart), so no invocation is lost or run twice over.
 *
 * With `retire` (the api replica that deleted a source or workflow publishes one), those accounts' processes are
 * retired instead (IsolatedRunner.retire): the code the deleted source's runs left behind stops, on every replica
 * where it ran, without running the account's other runs in flight twice.
 */
export class SandboxRestarts {
  private readonly seen = new Set<string>();
  private readonly sub: Subscription;

  constructor(nats: NatsService, private readonly executor: Executor, private readonly metrics: RunnerMetrics, private readonly logger: Logger) {
    this.sub = nats.nc.subscribe(nats.names.restartSandboxes, { callback: (err, msg) => !err && this.heard(msg.data) });
  }

  private heard(data: Uint8Array): void {
    const change = readRestartSandboxes(data);
    if (!change || this.seen.has(change.id)) return;
    if (this.seen.size >= SEEN_MAX) this.seen.clear();
    this.seen.add(change.id);
    const { accounts } = change;
    if (change.retire) {
      const retired = this.executor.retireSandboxes?.(accounts) ?? 0;
      this.metrics.sandboxRetirements.inc(retired);
      if (retired) this.logger.info({ accounts, retired }, 'source or workflow deleted: sandbox processes retired');
      return;
    }
    const stopped = this.executor.restartSandboxes?.(accounts) ?? 0;
    this.metrics.sandboxRestarts.inc(stopped);
    if (stopped) this.logger.info({ accounts, stopped }, 'access changed: sandbox processes restarted');
  }

  close(): void {
    this.sub.unsubscribe();
  }
}
