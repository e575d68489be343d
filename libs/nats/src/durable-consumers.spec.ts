import { randomBytes } from 'node:crypto';
import { connect, JsMsg, NatsConnection, StorageType } from 'nats';
import { boundConsumer, consumeEach, ensureDurable } from './durable-consumers';
import { natsAdmin, need } from '../../../test/support/env';

// Real NATS (the test run's server and prefix): the callback consumption the router uses.
describe('consumeEach', () => {
  const prefix = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  const stream = `${prefix}_CE`;
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect(natsAdmin());
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.ce.>`], storage: StorageType.Memory });
  });
  afterAll(async () => {
    await (await nc.jetstreamManager()).streams.delete(stream).catch(() => undefined);
    await nc.drain();
  });

  const fill = async (subject: string, n: number): Promise<void> => {
    const js = nc.jetstream();
    await Promise.all(Array.from({ length: n }, (_, i) => js.publish(subject, Buffer.from(String(i)))));
  };

  it('hands every message over in stream order, more than one pull of them, and nothing is left unacknowledged', async () => {
    await fill(`${prefix}.ce.a`, 700);
    await ensureDurable(await nc.jetstreamManager(), stream, { durable_name: 'order', filter_subject: `${prefix}.ce.a` });
    const seen: number[] = [];
    let all!: () => void;
    const done = new Promise<void>((r) => (all = r));
    const messages = await consumeEach(
      await boundConsumer(nc.jetstream(), stream, 'order'),
      { max_messages: 64 },
      (m) => {
        seen.push(Number(Buffer.from(m.data).toString()));
        m.ack();
        if (seen.length === 700) all();
      },
      () => undefined,
    );
    await done;
    messages.stop();
    expect(seen).toEqual(Array.from({ length: 700 }, (_, i) => i));
    await nc.flush();
    const info = await (await nc.jetstreamManager()).consumers.info(stream, 'order');
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
  });

  it('stops on a handler that throws, telling onStopped why, and the message thrown on is delivered again', async () => {
    await fill(`${prefix}.ce.b`, 3);
    await ensureDurable(await nc.jetstreamManager(), stream, { durable_name: 'throws', filter_subject: `${prefix}.ce.b`, ack_wait: 1_000_000_000 });
    const consumer = await boundConsumer(nc.jetstream(), stream, 'throws');
    let calls = 0;
    const why = await new Promise<Error>((resolve) => {
      const onMessage = (m: JsMsg): void => {
        calls++;
        if (Number(Buffer.from(m.data).toString()) === 1) throw new Error('handler failed');
        m.ack();
      };
      void consumeEach(consumer, { max_messages: 8 }, onMessage, resolve);
    });
    expect(why.message).toBe('handler failed');
    expect(calls).toBe(2);
    // The message the handler failed on was never acknowledged: consuming again gets it (and the one after it) again.
    const again: number[] = [];
    let both!: () => void;
    const redelivered = new Promise<void>((r) => (both = r));
    const messages = await consumeEach(
      consumer,
      { max_messages: 8 },
      (m) => {
        again.push(Number(Buffer.from(m.data).toString()));
        m.ack();
        if (again.length === 2) both();
      },
      () => undefined,
    );
    await redelivered;
    messages.stop();
    expect(again).toEqual([1, 2]);
  });
});
