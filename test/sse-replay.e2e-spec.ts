import { apiOnlySystemWithEmitter } from './support/system-with-user';
import { eventually } from './support/system';
import { openStream } from './support/sse-stream';
import { insertSource } from './events.helpers';

const STORED = 3_000;

/**
 * A stream resumed with Last-Event-ID replays what was stored before it opened. It read it 2 messages a fetch, as
 * live events (a fetch bounded by bytes waited out its expiry): a replay of thousands of small events took a
 * thousand fetches. It now reads the replay by bytes, many small events a fetch, then goes on live.
 */
describe('an event stream replaying many small events', () => {
  const ctx = apiOnlySystemWithEmitter();

  it('gives every event after Last-Event-ID once, in order, then the events emitted while it replayed', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const ids: string[] = [];
    for (let i = 0; i < STORED; i++) ids.push((await ctx.emitter.emit(src, ctx.user.id, { i, pad: 'p'.repeat(200) })).id);
    const stream = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey, ids[99]);
    expect(stream.status).toBe(200);
    try {
      await eventually(async () => stream.frames[0]?.comment === 'sse-handshake', { what: 'the handshake' });
      // Stored after the stream opened, while it replays: shown after the replay, whatever their ids.
      for (let i = 0; i < 3; i++) ids.push((await ctx.emitter.emit(src, ctx.user.id, { live: i })).id);
      const received = (): string[] => stream.frames.filter((f) => f.data).map((f) => f.id!);
      await eventually(async () => received().length >= ids.length - 100, { what: 'the replay and the live events', timeoutMs: 60_000 });
      // One more once they came: whatever came twice came before it.
      ids.push((await ctx.emitter.emit(src, ctx.user.id, { last: true })).id);
      await eventually(async () => received().includes(ids.at(-1)!), { what: 'the last event' });
      expect(received()).toEqual(ids.slice(100));
      expect(stream.frames.filter((f) => f.data).map((f) => (JSON.parse(f.data!) as { id: string }).id)).toEqual(ids.slice(100));
    } finally {
      stream.close();
    }
  });
});
