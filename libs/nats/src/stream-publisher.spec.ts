import { randomBytes } from 'node:crypto';
import { connect, NatsConnection, StorageType } from 'nats';
import { StreamPublisher } from './stream-publisher';
import { coalesceNatsWrites } from './write-coalescing';
import { natsAdmin, need } from '../../../test/support/env';

// Real NATS (the test run's server and prefix): the publisher and the write coalescing every app installs.
describe('StreamPublisher over coalesced NATS writes', () => {
  const prefix = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  const stream = `${prefix}_SP`;
  let nc: NatsConnection;
  let other: NatsConnection;

  beforeAll(async () => {
    coalesceNatsWrites();
    nc = await connect(natsAdmin());
    other = await connect(natsAdmin());
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.sp.>`], storage: StorageType.Memory, duplicate_window: 60_000_000_000 });
  });
  afterAll(async () => {
    await (await nc.jetstreamManager()).streams.delete(stream).catch(() => undefined);
    await nc.drain();
    await other.drain();
  });

  it('stores every message of a burst in order, once per Nats-Msg-Id, and resolves each publish on its acknowledgement', async () => {
    const publisher = new StreamPublisher(nc);
    try {
      const enc = (i: number): Uint8Array => Buffer.from(JSON.stringify({ i }));
      // One event-loop turn: all of it leaves in one write.
      const acks = Array.from({ length: 300 }, (_, i) => publisher.publish(`${prefix}.sp.a`, enc(i), `m${i}`));
      acks.push(publisher.publish(`${prefix}.sp.a`, enc(999), 'm7')); // a duplicate id: acknowledged, not stored again
      await Promise.all(acks);
      const jsm = await nc.jetstreamManager();
      expect((await jsm.streams.info(stream)).state.messages).toBe(300);
      for (const seq of [1, 150, 300]) {
        const m = await jsm.streams.getMessage(stream, { seq });
        expect(JSON.parse(Buffer.from(m.data).toString())).toEqual({ i: seq - 1 });
        expect(m.header.get('Nats-Msg-Id')).toBe(`m${seq - 1}`);
      }
    } finally {
      publisher.close();
    }
  });

  it('rejects a publish to a subject no stream captures', async () => {
    const publisher = new StreamPublisher(nc, 2_000);
    try {
      await expect(publisher.publish(`${prefix}.nostream`, Buffer.from('{}'), 'x1')).rejects.toThrow(/publish failed|not acknowledged/);
    } finally {
      publisher.close();
    }
  });

  it('keeps core messages in order across turns and connections', async () => {
    const got: number[] = [];
    const sub = other.subscribe(`${prefix}.core`, { callback: (_e, m) => got.push(Number(Buffer.from(m.data).toString())) });
    await other.flush();
    for (let turn = 0; turn < 5; turn++) {
      for (let i = 0; i < 100; i++) nc.publish(`${prefix}.core`, Buffer.from(String(turn * 100 + i)));
      await new Promise((r) => setImmediate(r));
    }
    await nc.flush();
    const deadline = Date.now() + 10_000;
    while (got.length < 500 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    sub.unsubscribe();
    expect(got).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });
});
