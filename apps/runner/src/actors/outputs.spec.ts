import { EmitterClock, normalizeTs } from './emit-ids';
import { buildOutputs, originalEventWithin } from './outputs';

describe('emit ordering, ids and side channels', () => {
  it('normalises ts from ms, seconds, ISO and numeric strings', () => {
    expect(normalizeTs(1_700_000_000_000)).toBe(1_700_000_000_000);
    expect(normalizeTs(1_700_000_000)).toBe(1_700_000_000_000);
    expect(normalizeTs('1700000000')).toBe(1_700_000_000_000);
    expect(normalizeTs('1700000000000')).toBe(1_700_000_000_000);
    expect(normalizeTs('2023-11-14T22:13:20.000Z')).toBe(1_700_000_000_000);
    expect(normalizeTs('soon')).toBeUndefined();
    expect(normalizeTs(undefined)).toBeUndefined();
  });

  it('gives strictly increasing ids per emitter, also within one millisecond and when the clock goes back', () => {
    let t = 1000;
    const clock = new EmitterClock({ lastMs: 0, seq: 0 }, () => t);
    expect([clock.next(), clock.next()]).toEqual(['1000-0', '1000-1']);
    t = 900;
    expect(clock.next()).toBe('1000-2');
    t = 2000;
    expect(clock.next()).toBe('2000-0');
  });

  it('orders emits by ts oldest first, keeps metadata, and turns logs and errors into $logs and $errors', () => {
    const clock = new EmitterClock({ lastMs: 0, seq: 0 }, () => 5000);
    const out = buildOutputs(
      {
        emits: [
          { event: 'b', meta: { id: 'b', ts: '2024-01-02T00:00:00Z' as unknown as number, summary: 'B' } },
          { event: 'a', meta: { id: 'a', ts: 1704067200, name: 'chan', delivery_ts: 7 } },
        ],
        dbWrites: {},
        logs: [{ ts: 4000, k: 'console.log', msg: 'hi' }],
        error: { name: 'TypeError', message: 'boom', stack: 'at x' },
        durationMs: 3,
      },
      { sourceId: 'dc_1', ownerId: 'u_1', invocationId: 'inv_1', chain: { root: 'inv_1', depth: 0 }, dedupe: 'last', originalEvent: { q: 1 }, now: 5000 },
      {},
      clock,
    );
    expect(out.events.map((e) => [e.name, e.event, e.emitId, e.id])).toEqual([
      ['$logs', { ts: 4000, k: 'console.log', msg: 'hi' }, 'inv_1:l0', '5000-0'],
      ['chan', 'a', 'inv_1:e0', '5000-1'],
      ['', 'b', 'inv_1:e1', '5000-2'],
      ['$errors', { error: { name: 'TypeError', message: 'boom', stack: 'at x' }, original_event: { q: 1 }, ts: 5000 }, 'inv_1:x0', '5000-3'],
    ]);
    expect(out.events[1]).toMatchObject({ ts: 1704067200000, meta: { id: 'a', delivery_ts: 7 } });
    expect(out.events[2]).toMatchObject({ summary: 'B', ts: Date.parse('2024-01-02T00:00:00Z') });
    // `last` caches the newest event's id.
    expect(out.dedupe.last).toBe('b');
  });

  it('reports an emit without id under a dedupe strategy as an $errors event', () => {
    const out = buildOutputs(
      { emits: [{ event: { n: 1 }, meta: {} }], dbWrites: {}, logs: [], durationMs: 1 },
      { sourceId: 'dc_1', ownerId: 'u_1', invocationId: 'inv_2', chain: { root: 'inv_2', depth: 0 }, dedupe: 'unique', originalEvent: null, now: 1 },
      {},
      new EmitterClock(),
    );
    expect(out.events).toHaveLength(1);
    expect(out.events[0].name).toBe('$errors');
    expect(out.events[0].event).toMatchObject({ error: { name: 'DedupeError', message: expect.stringMatching(/needs an id/) }, original_event: { n: 1 } });
  });

  it('keeps the triggering event of a $errors event within the event size limit', () => {
    expect(originalEventWithin({ a: 1 }, 100)).toEqual({ a: 1 });
    expect(originalEventWithin(undefined, 100)).toBeNull();
    const big = { bodyRaw: 'x'.repeat(2000) };
    expect(originalEventWithin(big, 1000)).toEqual({ $truncated: true, size_bytes: Buffer.byteLength(JSON.stringify(big)), preview: JSON.stringify(big).slice(0, 1024) });
    // The preview is 1,024 bytes of UTF-8, as event summaries cut theirs, not 1,024 characters (up to 3 KB).
    const accented = { bodyRaw: 'é'.repeat(2000) };
    const marker = originalEventWithin(accented, 1000) as { preview: string };
    expect(Buffer.byteLength(marker.preview)).toBeLessThanOrEqual(1024);
    // '{"bodyRaw":"' is 12 bytes, then 506 characters of 2 bytes.
    expect(marker.preview).toBe(JSON.stringify(accented).slice(0, 12 + 506));
  });
});
