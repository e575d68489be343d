import { randomBytes } from 'node:crypto';
import { connect, type Consumer, type FetchOptions, JsMsg, NatsConnection, StorageType } from 'nats';
import { BATCH_BYTES } from './batch-bytes';
import { boundedFetches, bytesFetch, fetchedMessages, fetchesThrough } from './bounded-fetch';
import { natsAdmin, need } from '../../../test/support/env';

/** A message of about 1 MiB: two of them fit BATCH_BYTES, three do not. */
const LARGE = Buffer.alloc(1024 * 1024 - 4096, 'x');

// Real NATS (the test run's server and prefix): the reading of EMITS by a range delete and by index recovery.
describe('boundedFetches', () => {
  const prefix = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  const stream = `${prefix}_BF`;
  let nc: NatsConnection;
  const seqs: Record<'small' | 'large', number[]> = { small: [], large: [] };

  beforeAll(async () => {
    nc = await connect(natsAdmin());
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.bf.>`], storage: StorageType.Memory, max_bytes: 128 * 1024 * 1024 });
    const js = nc.jetstream();
    // Interleaved: each scan reads its own subject of a stream holding the other's messages between.
    for (let i = 0; i < 1200; i++) {
      seqs.small.push((await js.publish(`${prefix}.bf.small`, Buffer.from(JSON.stringify({ i, pad: 'p'.repeat(200) })))).seq);
      if (i % 30 === 0) seqs.large.push((await js.publish(`${prefix}.bf.large`, LARGE)).seq);
    }
  });
  afterAll(async () => {
    await (await nc.jetstreamManager()).streams.delete(stream).catch(() => undefined);
    await nc.drain();
  });

  /** Every batch read of `subject` up to `lastSeq`, and how many more messages than those handed over the server had sent at most (when a batch was). */
  const scan = async (subject: string, lastSeq: number): Promise<{ batches: JsMsg[][]; sentAhead: number }> => {
    const consumer = await nc.jetstream().consumers.get(stream, { filterSubjects: `${prefix}.bf.${subject}` });
    const batches: JsMsg[][] = [];
    let sentAhead = 0;
    for await (const batch of boundedFetches(consumer, lastSeq, nc.info!.max_payload)) {
      batches.push(batch);
      sentAhead = Math.max(sentAhead, (await consumer.info()).delivered.consumer_seq - batches.flat().length);
    }
    await consumer.delete();
    return { batches, sentAhead };
  };
  const bytes = (batch: JsMsg[]): number => batch.reduce((n, m) => n + m.data.length, 0);

  it('hands over every small message once, in order, many in a fetch', async () => {
    const { batches, sentAhead } = await scan('small', seqs.small[seqs.small.length - 1]);
    expect(batches.flat().map((m) => m.seq)).toEqual(seqs.small);
    expect(sentAhead).toBe(0);
    // Not 2 at a time (600 fetches): a fetch holds as many as its bytes allow, up to the client's count for it.
    expect(batches.length).toBeLessThanOrEqual(12);
  });

  it('holds at most BATCH_BYTES of large messages at a time, the next fetch once a batch is handled', async () => {
    const { batches, sentAhead } = await scan('large', seqs.large[seqs.large.length - 1]);
    expect(batches.flat().map((m) => m.seq)).toEqual(seqs.large);
    for (const batch of batches) expect(bytes(batch)).toBeLessThanOrEqual(BATCH_BYTES);
    expect(sentAhead).toBe(0);
  });

  it('stops at the last sequence it is asked for', async () => {
    const lastSeq = seqs.small[700];
    const { batches } = await scan('small', lastSeq);
    expect(batches.flat().map((m) => m.seq)).toEqual(seqs.small.slice(0, 701));
  });

  it('hands over to a reader that goes on the messages past the last sequence its last fetch brought (fetchesThrough)', async () => {
    // The last sequence asked for is a large message's, between small ones: the scan of the small ones reads past it.
    const lastSeq = seqs.large[20];
    const consumer = await nc.jetstream().consumers.get(stream, { filterSubjects: `${prefix}.bf.small` });
    const read: number[] = [];
    for await (const batch of fetchesThrough(consumer, lastSeq, nc.info!.max_payload)) read.push(...batch.map((m) => m.seq));
    await consumer.delete();
    const through = seqs.small.findIndex((seq) => seq > lastSeq);
    expect(read).toEqual(seqs.small.slice(0, through + 1));
  });

  it("ends a live reader's fetch once the client's count of messages came, without waiting out its expiry (fetchedMessages)", async () => {
    const consumer = await nc.jetstream().consumers.get(stream, { filterSubjects: `${prefix}.bf.small` });
    const started = Date.now();
    const read: number[] = [];
    for (let i = 0; i < 3; i++) {
      const opts = bytesFetch(nc.info!.max_payload, 30_000);
      for await (const m of fetchedMessages(await consumer.fetch(opts), opts)) read.push(m.seq);
    }
    await consumer.delete();
    expect(read).toEqual(seqs.small.slice(0, 300));
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  /**
   * A fetch that brings nothing while messages are left (a server too busy to send within the expiry) cannot be made
   * on demand here: a consumer that brings nothing at its first fetches stands for it.
   */
  const stalling = (consumer: Consumer, emptyFirst: number): Consumer =>
    Object.assign(Object.create(consumer) as Consumer, {
      fetch: async (opts: FetchOptions) => (emptyFirst-- > 0 ? (async function* () {})() : consumer.fetch(opts)),
    });

  it('fetches again when a fetch brings nothing while messages are left, and says so when they never come', async () => {
    const get = () => nc.jetstream().consumers.get(stream, { filterSubjects: `${prefix}.bf.small` });
    const lastSeq = seqs.small[99];
    const read: number[] = [];
    for await (const batch of boundedFetches(stalling(await get(), 2), lastSeq, nc.info!.max_payload)) read.push(...batch.map((m) => m.seq));
    expect(read).toEqual(seqs.small.slice(0, 100));
    const never = async () => {
      for await (const batch of boundedFetches(stalling(await get(), 100), lastSeq, nc.info!.max_payload)) read.push(...batch.map((m) => m.seq));
    };
    await expect(never()).rejects.toThrow(/messages were not sent in 5 fetches/);
  });
});
