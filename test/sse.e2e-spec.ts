import { EmittedEvent } from '@app/contracts';
import { createUser } from './support/accounts';
import { apiOnlySystemWithEmitter } from './support/system-with-user';
import { eventually } from './support/system';
import { Frame, openStream } from './support/sse-stream';
import { insertSource } from './events.helpers';

describe('SSE streams of a source', () => {
  const ctx = apiOnlySystemWithEmitter({ SSE_KEEPALIVE_MS: '200' });

  const events = (frames: Frame[]): Array<{ id: string; event: unknown; metadata: { name: string } }> => frames.filter((f) => f.data).map((f) => ({ ...JSON.parse(f.data!), frameId: f.id }));

  it('streams emits and observations live, one unnamed message per event, after a handshake comment', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const emits = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey);
    const obs = await openStream(ctx.system, `/sse/dc/${src}/observations`, ctx.user.apiKey);
    for (const stream of [emits, obs]) {
      expect(stream.status).toBe(200);
      expect(stream.contentType).toMatch(/^text\/event-stream/);
    }
    // Like every answer of the API (README, "Security model"): never stored by a browser or proxy, never type-sniffed.
    for (const stream of [emits, obs]) {
      expect(stream.headers.get('cache-control')).toBe('no-store, no-transform');
      expect(stream.headers.get('x-content-type-options')).toBe('nosniff');
    }
    await eventually(async () => emits.frames[0]?.comment === 'sse-handshake' && obs.frames[0]?.comment === 'sse-handshake', { what: 'handshakes' });
    const a = await ctx.emitter.emit(src, ctx.user.id, { a: 1 });
    const log = await ctx.emitter.emit(src, ctx.user.id, { ts: 1, k: 'console.log', msg: 'hi' }, { name: '$logs' });
    const b = await ctx.emitter.emit(src, ctx.user.id, { b: 2 }, { name: 'custom' });
    await eventually(async () => events(emits.frames).length === 2 && events(obs.frames).length === 1, { what: 'live events' });
    expect(emits.frames.filter((f) => f.data).map((f) => f.id)).toEqual([a.id, b.id]);
    expect(events(emits.frames)[0]).toEqual({ id: a.id, frameId: a.id, indexed_at_ms: expect.any(Number), event: { a: 1 }, metadata: { emit_id: a.emitId, name: '', emitter_id: src } });
    expect(events(obs.frames)[0]).toEqual(expect.objectContaining({ id: log.id, event: { ts: 1, k: 'console.log', msg: 'hi' } }));
    emits.close();
    obs.close();
  });

  it('keeps or drops the fields of each event with the common include / exclude parameters', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const picked = await openStream(ctx.system, `/sse/dc/${src}/emits?include=id,event`, ctx.user.apiKey);
    const dropped = await openStream(ctx.system, `/sources/${src}/sse?exclude=event,indexed_at_ms`, ctx.user.apiKey);
    await eventually(async () => picked.frames[0]?.comment === 'sse-handshake' && dropped.frames[0]?.comment === 'sse-handshake', { what: 'handshakes' });
    const a = await ctx.emitter.emit(src, ctx.user.id, { a: 1 });
    await eventually(async () => events(picked.frames).length === 1 && events(dropped.frames).length === 1, { what: 'the event on both streams' });
    expect(JSON.parse(picked.frames.find((f) => f.data)!.data!)).toEqual({ id: a.id, event: { a: 1 } });
    expect(JSON.parse(dropped.frames.find((f) => f.data)!.data!)).toEqual({ id: a.id, metadata: { emit_id: a.emitId, name: '', emitter_id: src } });
    picked.close();
    dropped.close();
  });

  it('shows an event emitted as soon as the handshake is read (the stream starts before its handshake)', async () => {
    for (let i = 0; i < 20; i++) {
      const src = await insertSource(ctx.system, ctx.user.id);
      const stream = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey);
      await eventually(async () => stream.frames[0]?.comment === 'sse-handshake', { what: 'handshake', intervalMs: 1 });
      const e = await ctx.emitter.emit(src, ctx.user.id, { i });
      await eventually(async () => events(stream.frames).some((f) => f.id === e.id), { what: `the event emitted right after handshake ${i}`, timeoutMs: 8_000 });
      stream.close();
    }
  });

  it('gives a stream that is read a burst of 1,000 events as it comes (once: 100 every 5 s), each once, and a resumed stream too', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const stream = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey);
    await eventually(async () => stream.frames[0]?.comment === 'sse-handshake', { what: 'handshake' });
    const sent = await Promise.all(Array.from({ length: 1000 }, (_, i) => ctx.emitter.emit(src, ctx.user.id, { i })));
    // Event ids in their order: `<ms>-<seq>`, compared as numbers.
    const byId = (a: string, b: string) => Number(a.split('-')[0]) - Number(b.split('-')[0]) || Number(a.split('-')[1]) - Number(b.split('-')[1]);
    const ids = sent.map((e) => e.id).sort(byId);
    await eventually(async () => events(stream.frames).length === 1000, { what: 'the 1,000 events on the live stream', timeoutMs: 20_000 });
    expect(events(stream.frames).map((e) => e.id).sort(byId)).toEqual(ids);
    stream.close();
    const resumed = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey, ids[99]);
    await eventually(async () => events(resumed.frames).length === 900, { what: 'the 900 events after the 100th, resumed', timeoutMs: 20_000 });
    expect(events(resumed.frames).map((e) => e.id).sort(byId)).toEqual(ids.slice(100));
    resumed.close();
  });

  it('resumes after Last-Event-ID, replaying what was missed, then continues live', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const sent: EmittedEvent[] = [];
    for (let i = 0; i < 4; i++) sent.push(await ctx.emitter.emit(src, ctx.user.id, { i }));
    const stream = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey, sent[1].id);
    await eventually(async () => events(stream.frames).length === 2, { what: 'replay' });
    const live = await ctx.emitter.emit(src, ctx.user.id, { i: 4 });
    await eventually(async () => events(stream.frames).length === 3, { what: 'live after replay' });
    expect(events(stream.frames).map((e) => e.id)).toEqual([sent[2].id, sent[3].id, live.id]);
    stream.close();
  });

  it('never replays events deleted with DELETE /sources/{id}/events: they leave the emits stream too', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const neighbour = await insertSource(ctx.system, ctx.user.id);
    const sent: EmittedEvent[] = [];
    for (let i = 0; i < 5; i++) sent.push(await ctx.emitter.emit(src, ctx.user.id, { i }));
    const kept = await ctx.emitter.emit(neighbour, ctx.user.id, { neighbour: true });
    /** Which of `among` a stream resumed after `after` replays (all of the replay arrives before a live marker event). */
    const replayed = async (source: string, after: string, among: EmittedEvent[]): Promise<string[]> => {
      const stream = await openStream(ctx.system, `/sse/dc/${source}/emits`, ctx.user.apiKey, after);
      await eventually(async () => stream.frames[0]?.comment === 'sse-handshake', { what: 'handshake' });
      const marker = await ctx.emitter.emit(source, ctx.user.id, { marker: true });
      await eventually(async () => events(stream.frames).some((e) => e.id === marker.id), { what: 'the live marker' });
      stream.close();
      return events(stream.frames).map((e) => e.id).filter((id) => among.some((s) => s.id === id));
    };
    expect(await replayed(src, sent[0].id, sent)).toEqual(sent.slice(1).map((e) => e.id));

    expect((await ctx.api.del(`/sources/${src}/events?start_id=${sent[1].id}&end_id=${sent[2].id}`)).status).toBe(202);
    const rest = [sent[3].id, sent[4].id];
    await eventually(async () => JSON.stringify(await replayed(src, sent[0].id, sent)) === JSON.stringify(rest), { what: 'a resumed stream without the deleted range', timeoutMs: 20_000 });

    // An open-ended range too: everything up to `end_id` (the scan starts at the stream's first message).
    expect((await ctx.api.del(`/sources/${src}/events?end_id=${sent[3].id}`)).status).toBe(202);
    await eventually(async () => JSON.stringify(await replayed(src, `${sent[0].ts - 1}-0`, sent)) === JSON.stringify([sent[4].id]), { what: 'a resumed stream without the events up to end_id', timeoutMs: 20_000 });

    expect((await ctx.api.del(`/sources/${src}/events`)).status).toBe(202);
    await eventually(async () => (await replayed(src, sent[0].id, sent)).length === 0, { what: 'a resumed stream with nothing to replay', timeoutMs: 20_000 });
    // Another source's events are untouched.
    expect(await replayed(neighbour, `${kept.ts - 1}-0`, [kept])).toEqual([kept.id]);
  });

  it('keeps an idle stream alive with a :sse-handshake comment every SSE_KEEPALIVE_MS (15 s by default)', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const stream = await openStream(ctx.system, `/sse/dc/${src}/observations`, ctx.user.apiKey);
    await eventually(async () => stream.frames.filter((f) => f.comment === 'sse-handshake').length >= 3, { what: 'three handshake comments' });
    expect(stream.frames.every((f) => f.comment === 'sse-handshake' && f.id === undefined && f.data === undefined)).toBe(true);
    stream.close();
  });

  it('requires the key and hides other accounts\' sources', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    expect((await fetch(`${ctx.system.origin}/sse/dc/${src}/emits`)).status).toBe(401);
    const other = createUser(ctx.system);
    const denied = await openStream(ctx.system, `/sse/dc/${src}/emits`, other.apiKey);
    expect(denied.status).toBe(404);
    const bad = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey, 'garbage');
    expect(bad.status).toBe(400);
  });
});
