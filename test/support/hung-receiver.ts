import { Receiver } from '../events.helpers';

/**
 * A webhook receiver on every loopback address, so that each webhook pointed at its own 127.0.0.N is its own origin:
 * the first request from each origin fails (500, so that its later events take DELIVERIES), every later one hangs
 * until `release()`. Stopping it releases them.
 */
export class HungReceiver extends Receiver {
  readonly release: () => void;

  constructor() {
    super();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    this.release = release;
    const failed = new Set<string>();
    this.respond = (r) => {
      if (failed.has(String(r.headers.host))) return released.then(() => ({ status: 200 }));
      failed.add(String(r.headers.host));
      return { status: 500 };
    };
  }

  override start(): Promise<this> {
    return super.start('0.0.0.0');
  }

  /** Distinct `<host>|<x-pd-event-id>` pairs received: each webhook's deliveries, once each. */
  deliveries(): Set<string> {
    return new Set(this.received.map((r) => `${String(r.headers.host)}|${String(r.headers['x-pd-event-id'])}`));
  }

  override async stop(): Promise<void> {
    this.release();
    await super.stop();
  }
}
