import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { loadConfig } from '@app/config';
import { decodeJson, EmittedEvent, emitsOf, isEmitBatch } from '@app/contracts';
import { NatsService } from '@app/nats';
import { emitGroup, type EmitGroup, type EmitUnit } from '../apps/runner/src/actors/actor-deps';
import { JetStreamPublisher } from '../apps/runner/src/ops/jetstream-publisher';
import { RunnerMetrics } from '../apps/runner/src/ops/runner-metrics';
import { natsAdminEnv, need } from './support/env';

/**
 * The events of a message of several invocations go to EMITS as parts (`EmitBatch`), and a run again of the message
 * — split differently, some of it handed back, a part too large to share — stores no event twice and loses none.
 */
describe('EMITS parts: the events of a message of several, stored once', () => {
  const prefix = `t_${need('TEST_RUN_ID')}_parts${randomBytes(3).toString('hex')}`;
  let nats: NatsService;
  let publisher: JetStreamPublisher;
  let metrics: RunnerMetrics;
  let n = 0;

  beforeAll(async () => {
    nats = new NatsService(loadConfig({ ...natsAdminEnv(), NATS_PREFIX: prefix, DATA_DIR: mkdtempSync(join(tmpdir(), 'emit-parts-')), EMITS_MAX_BYTES: String(64 * 1024 * 1024) }), 'emit-parts-spec');
    await nats.start();
    metrics = new RunnerMetrics(new Registry());
    publisher = new JetStreamPublisher(nats, pino({ level: 'silent' }), {}, metrics);
  });

  afterAll(async () => {
    publisher?.close();
    await nats?.stop();
  });

  const newSource = () => `dc_parts${++n}`;
  const event = (sourceId: string, invocationId: string, i: number, body: unknown = { n: i }): EmittedEvent => ({
    id: `${1_700_000_000_000 + n}-${invocationId}${i}`,
    emitterId: sourceId,
    ownerId: 'u_parts',
    name: '',
    event: body,
    emitId: `${invocationId}:e${i}`,
    ts: 0,
    emittedAtMs: 0,
  });
  // Invocation ids (and so emit ids) are unique per test: EMITS dedupes message ids across its subjects.
  const run = (sourceId: string, id: string, count: number, body?: (i: number) => unknown) => ({
    invocationId: `${sourceId}.${id}`,
    events: Array.from({ length: count }, (_, i) => event(sourceId, `${sourceId}.${id}`, i, body?.(i))),
  });
  const group = (id: string, runs: ReturnType<typeof run>[], g: EmitGroup): EmitUnit => ({ group: g, runs });

  /** Every message stored on the source's subject, with its events. */
  const stored = async (sourceId: string): Promise<{ batch: boolean; emitIds: string[] }[]> => {
    const info = await nats.jsm.streams.info(nats.names.emitsStream, { subjects_filter: nats.names.emit(sourceId) });
    const count = info.state.subjects?.[nats.names.emit(sourceId)] ?? 0;
    if (!count) return [];
    const consumer = await nats.js.consumers.get(nats.names.emitsStream, { filterSubjects: nats.names.emit(sourceId) });
    const out: { batch: boolean; emitIds: string[] }[] = [];
    const msgs = await consumer.fetch({ max_messages: count, expires: 2_000 });
    for await (const m of msgs) {
      const decoded = decodeJson<unknown>(m.data);
      out.push({ batch: isEmitBatch(decoded), emitIds: emitsOf(decoded).map((e) => e.emitId.slice(sourceId.length + 1)) });
      if (out.length === count) break;
    }
    return out;
  };
  const allIds = (msgs: { emitIds: string[] }[]) => msgs.flatMap((m) => m.emitIds);

  it('stores a message of several as one part, in order, beside loose events', async () => {
    const s = newSource();
    const g = emitGroup(`${s}a`, false);
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 2), run(s, 'b', 1)], g), { events: [event(s, `${s}.x`, 0)] }]);
    expect(await stored(s)).toEqual([
      { batch: true, emitIds: ['a:e0', 'a:e1', 'b:e0'] },
      { batch: false, emitIds: ['x:e0'] },
    ]);
  });

  it('a run again of the message, split otherwise, stores only what the first delivery did not', async () => {
    const s = newSource();
    // First delivery: two tasks (a, b) then (c), then a crash before the message's acknowledgement.
    const first = emitGroup(`${s}a`, false);
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 1), run(s, 'b', 2)], first)]);
    await publisher.publishUnits([group(`${s}a`, [run(s, 'c', 1)], first)]);
    // Second delivery (another replica): all four in one task, their events emitted again.
    const readBefore = (await metrics.emitPartsReadBack.get()).values[0]?.value ?? 0;
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 1), run(s, 'b', 2), run(s, 'c', 1), run(s, 'd', 3)], emitGroup(`${s}a`, true))]);
    const ids = allIds(await stored(s));
    expect(ids).toEqual(['a:e0', 'b:e0', 'b:e1', 'c:e0', 'd:e0', 'd:e1', 'd:e2']);
    expect((await metrics.emitPartsReadBack.get()).values[0].value - readBefore).toBe(2);
    // A third delivery finds everything stored.
    await publisher.publishUnits([group(`${s}a`, [run(s, 'b', 2), run(s, 'd', 3)], emitGroup(`${s}a`, true))]);
    expect(allIds(await stored(s))).toEqual(ids);
  });

  it('an invocation handed back alone and run later stores its events once, after the others', async () => {
    const s = newSource();
    // a and c finished, b was handed back: the message went back with a, c in a part.
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 1), run(s, 'c', 1)], emitGroup(`${s}a`, false))]);
    // It returns: only b runs (a and c ran before on this replica).
    await publisher.publishUnits([group(`${s}a`, [run(s, 'b', 1)], emitGroup(`${s}a`, true))]);
    // It returns again elsewhere (the acknowledgement was lost): all three run.
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 1), run(s, 'b', 1), run(s, 'c', 1)], emitGroup(`${s}a`, true))]);
    expect(await stored(s)).toEqual([
      { batch: true, emitIds: ['a:e0', 'c:e0'] },
      { batch: true, emitIds: ['b:e0'] },
    ]);
  });

  it('a run too large to share a message goes one event per message, in order, and a run again stores none of it twice', async () => {
    const s = newSource();
    const big = (i: number) => ({ blob: 'x'.repeat(400_000), i });
    const runs = () => [run(s, 'a', 1), run(s, 'b', 3, big), run(s, 'c', 1)];
    await publisher.publishUnits([group('a', runs(), emitGroup(`${s}a`, false))]);
    const first = await stored(s);
    expect(first).toEqual([
      { batch: true, emitIds: ['a:e0'] },
      { batch: true, emitIds: [] },
      { batch: false, emitIds: ['b:e0'] },
      { batch: false, emitIds: ['b:e1'] },
      { batch: false, emitIds: ['b:e2'] },
      { batch: true, emitIds: ['c:e0'] },
    ]);
    await publisher.publishUnits([group('a', runs(), emitGroup(`${s}a`, true))]);
    expect(await stored(s)).toEqual(first);
  });

  it('a part erased since (a range delete) counts as stored: its events do not come back', async () => {
    const s = newSource();
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 1), run(s, 'b', 1)], emitGroup(`${s}a`, false))]);
    const info = await nats.jsm.streams.info(nats.names.emitsStream);
    await nats.jsm.streams.deleteMessage(nats.names.emitsStream, info.state.last_seq);
    expect(await stored(s)).toEqual([]);
    await publisher.publishUnits([group(`${s}a`, [run(s, 'a', 1), run(s, 'b', 1)], emitGroup(`${s}a`, true))]);
    expect(await stored(s)).toEqual([]);
  });
});
