import { apiOnlySystemWithEmitter } from './support/system-with-user';
import { eventually } from './support/system';
import { Frame, openStream } from './support/sse-stream';
import { insertSource } from './events.helpers';

/** Resume points a client chooses: malformed ones are refused, well-formed ones past the stream's end start it at its end. */
describe('SSE resume ids chosen by the client', () => {
  const ctx = apiOnlySystemWithEmitter();

  const ids = (frames: Frame[]): string[] => frames.filter((f) => f.data).map((f) => f.id!);

  it('refuses a malformed Last-Event-ID with 400 { error, code, details }', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    for (const bad of ['-1-0', '1--1', 'abc', '1.5-0', '1e3-0', '1-', '-0', '1234567890123456-0', '1-1234567890', '99999999999999999999999999-0']) {
      for (const path of [`/sse/dc/${src}/emits`, `/sources/${src}/sse`, `/sse/dc/${src}/observations`]) {
        const res = await fetch(ctx.system.origin + path, { headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'last-event-id': bad } });
        expect({ bad, path, status: res.status }).toEqual({ bad, path, status: 400 });
        expect(await res.json()).toEqual({ error: expect.stringContaining('Last-Event-ID'), code: 'invalid_request', details: { header: 'last-event-id' } });
      }
    }
  });

  it('starts a stream resumed after an id past its end at its end: every new event is shown', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const old = await ctx.emitter.emit(src, ctx.user.id, { old: true });
    for (const future of [`${Date.now() + 86_400_000}-0`, '999999999999999-999999999', '253402300800000-0']) {
      const stream = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey, future);
      expect({ future, status: stream.status }).toEqual({ future, status: 200 });
      await eventually(async () => stream.frames[0]?.comment === 'sse-handshake', { what: `the handshake after ${future}` });
      const fresh = await ctx.emitter.emit(src, ctx.user.id, { future });
      await eventually(async () => ids(stream.frames).includes(fresh.id), { what: `the new event on the stream resumed after ${future}`, timeoutMs: 20_000 });
      // What was stored before it opened is not replayed: the client said it had seen it.
      expect(ids(stream.frames)).toEqual([fresh.id]);
      expect(old.id).not.toEqual(fresh.id);
      stream.close();
    }
  });

  it('pages event_summaries from cursors past either end without an error', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    for (const cursor of ['999999999999999-999999999', '0-0']) {
      for (const side of ['after', 'before']) {
        const res = await ctx.api.get(`/sources/${src}/event_summaries?${side}=${cursor}`);
        expect({ cursor, side, status: res.status, data: res.body?.data }).toEqual({ cursor, side, status: 200, data: [] });
      }
    }
    for (const bad of ['-1-0', '1-99999999999', 'abc']) {
      const res = await ctx.api.get(`/sources/${src}/event_summaries?after=${bad}`);
      expect({ bad, status: res.status, code: res.body?.code }).toEqual({ bad, status: 400, code: 'invalid_request' });
    }
  });
});
