import { apiOnlySystemWithEmitter } from './support/system-with-user';
import { emitsConsumersOf } from './support/emits-consumers';
import { openStream } from './support/sse-stream';
import { eventually } from './support/system';
import { insertSource } from './events.helpers';

const STREAMS = 8;
const CLOSED_EARLY = 60;

/**
 * Each event stream reads EMITS through a consumer of its own on the NATS server. A closed stream's consumer stayed
 * there for its 5 minutes of inactivity: a client opening and closing streams in a loop piled up consumers on the
 * stream every account's events go through, which the server matches every stored message against.
 */
describe("an event stream's consumer", () => {
  const ctx = apiOnlySystemWithEmitter();

  it('is deleted when the stream closes, new or resumed', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const first = await ctx.emitter.emit(src, ctx.user.id, { i: 0 });
    // New streams, and resumed ones (their replay's consumer, then their live one).
    const streams = await Promise.all(
      Array.from({ length: STREAMS }, (_, i) => openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey, i % 2 ? first.id : undefined)),
    );
    expect(streams.map((s) => s.status)).toEqual(Array(STREAMS).fill(200));
    const marker = await ctx.emitter.emit(src, ctx.user.id, { i: 1 });
    await eventually(async () => streams.every((s) => s.frames.some((f) => f.id === marker.id)), { what: 'every stream reading live' });
    expect((await emitsConsumersOf(ctx.system, src)).length).toBe(STREAMS);

    streams.forEach((s) => s.close());
    await eventually(async () => (((await emitsConsumersOf(ctx.system, src)).length) === 0 ? true : undefined), { what: "the closed streams' consumers deleted", timeoutMs: 30_000 });
  });

  it('is deleted when the stream closes while the consumer is being made', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const first = await ctx.emitter.emit(src, ctx.user.id, { i: 0 });
    // Each stream closed as soon as its answer's head came, or a few milliseconds after it was asked for: its
    // consumer, made on its first fetch (new) or as its replay ends (resumed), is often still being made then.
    for (let i = 0; i < CLOSED_EARLY; i++) {
      const ac = new AbortController();
      const headers: Record<string, string> = { authorization: `Bearer ${ctx.user.apiKey}`, ...(i % 2 ? { 'last-event-id': first.id } : {}) };
      const opened = fetch(`${ctx.system.origin}/sse/dc/${src}/emits`, { headers, signal: ac.signal });
      if (i % 4 < 2) await opened.then(() => ac.abort(), () => undefined);
      else await new Promise((r) => setTimeout(r, i % 8)).then(() => ac.abort());
      await opened.catch(() => undefined);
    }
    // Deleted once made: well before the 5 minutes of inactivity after which the server would drop one left behind.
    await eventually(async () => (((await emitsConsumersOf(ctx.system, src)).length) === 0 ? true : undefined), { what: "the closed streams' consumers deleted", timeoutMs: 10_000 }).catch(
      async (e: Error) => Promise.reject(new Error(`${e.message}: ${(await emitsConsumersOf(ctx.system, src)).length} left`)),
    );
  });
});
