import { setDbKey } from './actor-state';
import type { RunInput } from './source-execution';
import type { InvocationDelivery } from './actor-deps';
import { type SettledDelivery, settleOnce } from './settled-delivery';

/**
 * The requests of an actor that run beside the job its mailbox is busy with:
 * HTTP requests that arrive while the source's deploy or activate hook runs
 * (so a hook can call its own endpoint — the handshake of many webhook
 * registrations — and get the answer of `run`). They run one at a time, in
 * order, with the hook's code and props; their db writes are gathered, for
 * they happened after the hook began and so go on top of the hook's writes.
 */
export class HookSideLane {
  private readonly queue: { delivery: SettledDelivery; hook: RunInput }[] = [];
  private running: Promise<void> | undefined;
  private hook: RunInput | undefined;
  private gathered: Record<string, unknown> = {};

  /** `serve` must not throw (it settles its own delivery). */
  constructor(private readonly serve: (delivery: SettledDelivery, hook: RunInput) => Promise<void>) {}

  /** Takes the request when a hook runs now; false: it goes to the mailbox. */
  offer(delivery: InvocationDelivery): boolean {
    if (!this.hook || delivery.msg.kind !== 'http') return false;
    this.queue.push({ delivery: settleOnce(delivery), hook: this.hook });
    this.running ??= this.run();
    return true;
  }

  /** Runs `hook` with requests served beside it; all of them have finished when this returns. */
  async during<T>(hook: RunInput, run: () => Promise<T>): Promise<T> {
    this.hook = hook;
    this.gathered = {};
    try {
      return await run();
    } finally {
      this.hook = undefined;
      await (this.running ?? Promise.resolve());
    }
  }

  /** Records a served request's db writes (kept until the next hook). */
  gather(writes: Record<string, unknown>): void {
    for (const k of Object.keys(writes)) setDbKey(this.gathered, k, writes[k]);
  }

  /** The db writes of the requests served beside the last hook. */
  get writes(): Record<string, unknown> {
    return this.gathered;
  }

  /** Takes every request still waiting (an actor that stops hands them back). */
  takeAll(): SettledDelivery[] {
    return this.queue.splice(0).map((j) => j.delivery);
  }

  private async run(): Promise<void> {
    try {
      while (this.queue.length) {
        const job = this.queue.shift() as { delivery: SettledDelivery; hook: RunInput };
        await this.serve(job.delivery, job.hook);
      }
    } finally {
      this.running = undefined;
    }
  }
}
