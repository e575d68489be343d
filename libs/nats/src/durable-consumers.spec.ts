import { randomBytes } from 'node:crypto';
import { connect, JsMsg, NatsConnection, StorageType } from 'nats';
import { boundConsumer, ensureDurable, pullEach } from './durable-consumers';
import { natsAdmin, need } from '../../../test/support/env';

// Real NATS (the test run's server and prefix): the callback pulls delivery's consumers make.
describe('pullEach', () => {
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
  const numberOf = (m: JsMsg): number => Number(Buffer.from(m.data).toString());

  it('hands over no more than it asked for, ends once they came, and pull after pull goes through the stream in order', async () => {
    await fill(`${prefix}.ce.a`, 150);
    await ensureDurable(await nc.jetstreamManager(), stream, { durable_name: 'order', filter_subject: `${prefix}.ce.a` });
    const consumer = await boundConsumer(nc.jetstream(), stream, 'order');
    const seen: number[] = [];
    const first: JsMsg[] = [];
    const pull = await pullEach(consumer, { max_messages: 64, expires: 30_000 }, (m) => first.push(m));
    // Ended by its 64th message, long before it expires; nothing more was handed out.
    expect(await pull.closed()).toBeUndefined();
    expect(first.map(numberOf)).toEqual(Array.from({ length: 64 }, (_, i) => i));
    await nc.flush();
    expect((await (await nc.jetstreamManager()).consumers.info(stream, 'order')).num_ack_pending).toBe(64);
    for (const m of first) m.ack();
    seen.push(...first.map(numberOf));
    while (seen.length < 150) {
      const next = await pullEach(consumer, { max_messages: Math.min(64, 150 - seen.length), expires: 30_000 }, (m) => {
        seen.push(numberOf(m));
        m.ack();
      });
      expect(await next.closed()).toBeUndefined();
    }
    expect(seen).toEqual(Array.from({ length: 150 }, (_, i) => i));
    await nc.flush();
    const info = await (await nc.jetstreamManager()).consumers.info(stream, 'order');
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
  });

  it('ends when it expires with fewer messages than it asked for, and without an error', async () => {
    await fill(`${prefix}.ce.c`, 3);
    await ensureDurable(await nc.jetstreamManager(), stream, { durable_name: 'expires', filter_subject: `${prefix}.ce.c` });
    const got: number[] = [];
    const pull = await pullEach(await boundConsumer(nc.jetstream(), stream, 'expires'), { max_messages: 100, expires: 1000 }, (m) => {
      got.push(numberOf(m));
      m.ack();
    });
    expect(await pull.closed()).toBeUndefined();
    expect(got).toEqual([0, 1, 2]);
  });

  it('ends on a handler that throws, with its error, and the message thrown on is delivered again', async () => {
    await fill(`${prefix}.ce.b`, 3);
    await ensureDurable(await nc.jetstreamManager(), stream, { durable_name: 'throws', filter_subject: `${prefix}.ce.b`, ack_wait: 1_000_000_000 });
    const consumer = await boundConsumer(nc.jetstream(), stream, 'throws');
    let calls = 0;
    const pull = await pullEach(consumer, { max_messages: 8, expires: 30_000 }, (m) => {
      calls++;
      if (numberOf(m) === 1) throw new Error('handler failed');
      m.ack();
    });
    expect(((await pull.closed()) as Error).message).toBe('handler failed');
    expect(calls).toBe(2);
    // The message the handler failed on was never acknowledged: pulling again gets it (and the one after it) again.
    const again: number[] = [];
    const next = await pullEach(consumer, { max_messages: 2, expires: 30_000 }, (m) => {
      again.push(numberOf(m));
      m.ack();
    });
    expect(await next.closed()).toBeUndefined();
    expect(again).toEqual([1, 2]);
  });
});
