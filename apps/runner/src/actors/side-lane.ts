/**
 * A second, one-at-a-time queue of an actor: jobs that may run beside the job
 * the actor's mailbox is busy with (HTTP requests to a source while its deploy
 * or activate hook runs). `idle()` resolves once everything pushed so far ran.
 */
export class SideLane<T> {
  private readonly queue: T[] = [];
  private running: Promise<void> | undefined;

  /** `handle` must not throw (it settles its own item). */
  constructor(private readonly handle: (item: T) => Promise<void>) {}

  push(item: T): void {
    this.queue.push(item);
    this.running ??= this.run();
  }

  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Takes every item still waiting (an actor that stops hands them back). */
  takeAll(): T[] {
    return this.queue.splice(0);
  }

  private async run(): Promise<void> {
    try {
      while (this.queue.length) await this.handle(this.queue.shift() as T);
    } finally {
      this.running = undefined;
    }
  }
}
