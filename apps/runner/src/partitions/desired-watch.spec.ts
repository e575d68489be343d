import pino from 'pino';
import type { KvEntry, KvWatchOptions, QueuedIterator } from 'nats';
import { DesiredStateWatch } from './desired-watch';

/** A watch the test feeds: entries pushed, then ended with or without an error. */
class FakeWatch {
  private readonly queue: (KvEntry | Error | null)[] = [];
  private wake: () => void = () => undefined;
  stopped = false;

  push(item: KvEntry | Error | null): void {
    this.queue.push(item);
    this.wake();
  }

  stop(): void {
    this.stopped = true;
    this.push(null);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<KvEntry> {
    for (;;) {
      while (!this.queue.length) await new Promise<void>((r) => (this.wake = r));
      const item = this.queue.shift();
      if (item === null || item === undefined) return;
      if (item instanceof Error) throw item;
      yield item;
    }
  }
}

const entry = (key: string, revision: number, operation: 'PUT' | 'DEL' = 'PUT'): KvEntry =>
  ({ key, revision, operation, value: new TextEncoder().encode('{}') }) as unknown as KvEntry;

function fakeKv() {
  const watches: { opts: KvWatchOptions; watch: FakeWatch }[] = [];
  let refuse = 0;
  return {
    watches,
    refuseNext(n: number) {
      refuse = n;
    },
    async watch(opts: KvWatchOptions = {}): Promise<QueuedIterator<KvEntry>> {
      if (refuse > 0) {
        refuse--;
        throw new Error('no responders');
      }
      const watch = new FakeWatch();
      watches.push({ opts, watch });
      return watch as unknown as QueuedIterator<KvEntry>;
    },
  };
}

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
};

describe('DesiredStateWatch', () => {
  it('watches again from the revision after the last entry seen when the watch fails or ends, until that works', async () => {
    const kv = fakeKv();
    const seen: string[] = [];
    const w = new DesiredStateWatch(kv, '3.*', (e) => seen.push(`${e.operation} ${e.key}@${e.revision}`), pino({ level: 'silent' }), 5);
    const started = w.start();
    await until(() => kv.watches.length === 1);
    kv.watches[0].watch.push(entry('3.dc_a', 10));
    kv.watches[0].watch.push(entry('3.dc_b', 12));
    kv.watches[0].opts.initializedFn?.();
    await started;

    // The ordered consumer could not be made again (NATS electing a leader): the watch fails, and so does the next try.
    kv.refuseNext(2);
    kv.watches[0].watch.push(new Error('consumer deleted'));
    await until(() => kv.watches.length === 2);
    expect(kv.watches[1].opts).toEqual({ key: '3.*', resumeFromRevision: 13 });
    kv.watches[1].watch.push(entry('3.dc_c', 15));
    kv.watches[1].watch.push(entry('3.dc_a', 16, 'DEL'));

    // Ended without an error (its subscription closed): watched again too.
    kv.watches[1].watch.push(null);
    await until(() => kv.watches.length === 3);
    expect(kv.watches[2].opts).toEqual({ key: '3.*', resumeFromRevision: 17 });
    expect(seen).toEqual(['PUT 3.dc_a@10', 'PUT 3.dc_b@12', 'PUT 3.dc_c@15', 'DEL 3.dc_a@16']);

    w.stop();
    expect(kv.watches[2].watch.stopped).toBe(true);
    await new Promise((r) => setTimeout(r, 30));
    expect(kv.watches).toHaveLength(3);
  });

  it('starts even when the first watch ends before it was initialized, and watches again from the start', async () => {
    const kv = fakeKv();
    const w = new DesiredStateWatch(kv, '0.*', () => undefined, pino({ level: 'silent' }), 5);
    const started = w.start();
    await until(() => kv.watches.length === 1);
    kv.watches[0].watch.push(new Error('connection closed'));
    await started;
    await until(() => kv.watches.length === 2);
    expect(kv.watches[1].opts).toEqual({ key: '0.*' });
    w.stop();
  });
});
