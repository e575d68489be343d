import type { KV, KvEntry, QueuedIterator } from 'nats';
import type { Logger } from 'pino';

/** How long after a watch ended on its own it is started again. */
const REWATCH_DELAY_MS = 1000;

/**
 * Follows the desired states of one partition (KV `sources`, its keys `<p>.*`), handing every entry to `onEntry` in
 * order. A watch that ends on its own — its ordered consumer could not be made again while NATS elected a leader, or
 * its subscription closed — is started again from the revision after the last entry seen, and again until that
 * works, so that no change is missed. Before, the partition went on without hearing of new, changed or deleted
 * sources until it moved to another replica: the invocations of a source created meanwhile waited in JetStream.
 */
export class DesiredStateWatch {
  private current: QueuedIterator<KvEntry> | undefined;
  private lastRevision = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kv: Pick<KV, 'watch'>,
    private readonly key: string,
    private readonly onEntry: (entry: KvEntry) => void,
    private readonly log: Logger,
    private readonly delayMs = REWATCH_DELAY_MS,
  ) {}

  /** Resolves once the entries there were at the start have been handed over (or the first watch ended before). */
  async start(): Promise<void> {
    let initialized!: () => void;
    const ready = new Promise<void>((r) => (initialized = r));
    this.current = await this.kv.watch({ key: this.key, initializedFn: () => initialized() });
    void this.follow(this.current, initialized);
    await ready;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.current?.stop();
  }

  private async follow(watch: QueuedIterator<KvEntry>, ended: () => void = () => undefined): Promise<void> {
    let failure: Error | undefined;
    try {
      for await (const entry of watch) {
        if (this.stopped) return;
        this.lastRevision = Math.max(this.lastRevision, entry.revision);
        this.onEntry(entry);
      }
    } catch (err) {
      failure = err as Error;
    } finally {
      ended();
    }
    if (this.stopped) return;
    this.log.warn({ err: failure?.message, revision: this.lastRevision }, 'the desired-state watch ended: watching again from the next revision');
    this.rewatch();
  }

  private rewatch(): void {
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      const from = this.lastRevision ? { resumeFromRevision: this.lastRevision + 1 } : {};
      this.kv.watch({ key: this.key, ...from }).then(
        (watch) => {
          this.current = watch;
          if (this.stopped) return watch.stop();
          void this.follow(watch);
        },
        (err: Error) => {
          this.log.warn({ err: err.message }, 'watching the desired states again failed; trying again');
          this.rewatch();
        },
      );
    }, this.delayMs);
    this.timer.unref?.();
  }
}
