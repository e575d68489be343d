import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The runner's Prometheus metrics, registered on the app's `Registry`. */
export class RunnerMetrics {
  readonly invocations: Counter<'outcome' | 'kind'>;
  readonly runDuration: Histogram<'method'>;
  readonly runBatchSize: Histogram;
  readonly mailboxDepth: Gauge;
  readonly partitionsOwned: Gauge;
  readonly actors: Gauge;
  readonly hooks: Counter<'hook' | 'outcome'>;
  readonly emits: Counter<'channel'>;
  readonly emitsHeldBack: Counter;
  readonly emitPartsReadBack: Counter;
  readonly timerLag: Histogram;
  readonly timerSources: Gauge;
  readonly timerSlotsSkipped: Counter;
  readonly installs: Counter<'outcome'>;
  readonly fenced: Counter;
  readonly handedBack: Counter;
  readonly sandboxes: Gauge;
  readonly sandboxTasks: Gauge;
  readonly sandboxRestarts: Counter;
  readonly sandboxRetirements: Counter;

  constructor(registry: Registry, sandboxStats: () => { sandboxes?: number; queueSize: number } | undefined = () => undefined) {
    this.invocations = new Counter({ name: 'runner_invocations_total', help: 'Invocations processed, by outcome (ok, error, inactive, duplicate, unknown_source, chain_refused: past SUBSCRIPTION_MAX_DEPTH or SUBSCRIPTION_CHAIN_MAX_RUNS, not run) and kind (http, timer, manual, subscription, apphook)', labelNames: ['outcome', 'kind'], registers: [registry] });
    this.runDuration = new Histogram({
      name: 'runner_run_duration_seconds',
      help: 'Wall-clock duration of run() and hooks in the sandbox',
      labelNames: ['method'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    });
    this.runBatchSize = new Histogram({
      name: 'runner_run_batch_size',
      help: 'Invocations of one source run as one sandbox task (micro-batching: RUN_BATCH_MAX_INVOCATIONS)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers: [registry],
    });
    this.mailboxDepth = new Gauge({ name: 'runner_mailbox_depth', help: 'Jobs waiting in actor mailboxes (all sources)', registers: [registry] });
    this.partitionsOwned = new Gauge({ name: 'runner_partitions_owned', help: 'Partitions whose lease this replica holds', registers: [registry] });
    this.actors = new Gauge({ name: 'runner_actors', help: 'Source actors loaded on this replica', registers: [registry] });
    this.hooks = new Counter({ name: 'runner_hooks_total', help: 'Lifecycle hooks run, by hook and outcome', labelNames: ['hook', 'outcome'], registers: [registry] });
    this.emitPartsReadBack = new Counter({ name: 'runner_emit_parts_read_back_total', help: 'EMITS batch messages (parts) found already stored by an earlier delivery of their INVOCATIONS message and read back, so that their events are not stored twice', registers: [registry] });
    this.emitsHeldBack = new Counter({ name: 'runner_emits_held_back_total', help: 'Events and $.send.sse messages whose publishing waited for their account\'s EMITS_PER_SECOND_PER_ACCOUNT or EMITS_BYTES_PER_SECOND_PER_ACCOUNT budget', registers: [registry] });
    this.emits = new Counter({ name: 'runner_emits_total', help: 'Events published, by channel class (default, custom, $logs, $errors)', labelNames: ['channel'], registers: [registry] });
    this.timerLag = new Histogram({
      name: 'runner_timer_fire_lag_seconds',
      help: 'Delay between a timer slot and the start of its run',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30],
      registers: [registry],
    });
    this.timerSources = new Gauge({ name: 'runner_timer_sources', help: 'Active timer sources scheduled on this replica', registers: [registry] });
    this.timerSlotsSkipped = new Counter({ name: 'runner_timer_slots_skipped_total', help: "Timer slots not fired because the source's previous slot was still waiting to be processed", registers: [registry] });
    this.installs = new Counter({ name: 'runner_installs_total', help: 'Component code loads from the object store (cache misses), by outcome', labelNames: ['outcome'], registers: [registry] });
    this.sandboxes = new Gauge({
      name: 'runner_sandbox_processes',
      help: 'Accounts\' sandbox processes running on this replica (SANDBOX_ISOLATION=namespaces)',
      registers: [registry],
      collect() {
        this.set(sandboxStats()?.sandboxes ?? 0);
      },
    });
    this.sandboxTasks = new Gauge({
      name: 'runner_sandbox_tasks',
      help: 'Tasks handed to the sandbox and not finished yet (running, or waiting for an account\'s threads)',
      registers: [registry],
      collect() {
        this.set(sandboxStats()?.queueSize ?? 0);
      },
    });
    this.sandboxRestarts = new Counter({ name: 'runner_sandbox_restarts_total', help: "Accounts' sandbox processes restarted because their access changed (a member removed, keys revoked or rotated: ctl.restart-sandboxes)", registers: [registry] });
    this.sandboxRetirements = new Counter({ name: 'runner_sandbox_retirements_total', help: "Accounts' sandbox processes retired because a source or workflow of the account was deleted (ctl.restart-sandboxes with retire): they took no new task and stopped once their runs in flight were done", registers: [registry] });
    this.handedBack = new Counter({ name: 'runner_invocations_handed_back_total', help: "Invocations handed back to JetStream for later (a nak with a delay) because their account or source held a quarter of the partition's room while less than a quarter was free, or an earlier one of their source was still handed back", registers: [registry] });
    this.fenced = new Counter({ name: 'runner_fenced_total', help: 'Actors dropped because another replica fenced their state', registers: [registry] });
  }
}
