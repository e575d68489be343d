import { deserialize } from 'node:v8';
import type { WorkerTask } from '../worker-protocol';
import { checkedFromHost } from './host-messages';
import { FRAME_MAX_BYTES, PIECE_BYTES, PieceAssembly, type Piece } from './frame-pieces';
import { doneBodies, responseBodies } from './result-bounds';

const bundle = { key: 'k', path: '/code/bundles/x.cjs', format: 'cjs' as const };
const runTask = { kind: 'executeBatch', bundle, parts: [{ items: [{}], timeoutMs: 1000 }] } as unknown as WorkerTask;

/** What the app reads of the host's bodies: each frame checked and put in as it comes, then the last message. */
function read(bodies: Buffer[]): { message: Record<string, unknown>; frames: number[] } | string {
  const pieces = new PieceAssembly();
  const frames = bodies.map((b) => b.byteLength);
  for (const body of bodies.slice(0, -1)) {
    const m = checkedFromHost(deserialize(body));
    if (typeof m === 'string' || m.t !== 'piece') return typeof m === 'string' ? m : 'not a piece';
    const misfit = pieces.add(m);
    if (misfit) return misfit;
  }
  const last = checkedFromHost(deserialize(bodies[bodies.length - 1])) as Record<string, unknown>;
  const root = last.t === 'done' ? (last.out as { value: unknown }).value : last.payload;
  const whole = pieces.finish(root);
  if (typeof whole === 'string') return whole;
  return { message: last.t === 'done' ? { ...last, out: { value: whole.value } } : { ...last, payload: whole.value }, frames };
}

describe('large answers in pieces (host cuts, app puts together)', () => {
  it('sends a result of many small values as frames of about PIECE_BYTES that put together give it back whole', () => {
    const emits = Array.from({ length: 30 }, (_, i) => ({ event: { i, many: Array.from({ length: 20_000 }, (_, k) => ({ k, s: 'v' })) }, meta: { id: `e${i}` } }));
    const out = { value: { results: [{ emits, dbWrites: { big: 'd'.repeat(700_000) }, logs: [], durationMs: 3 }] } };
    const bodies = doneBodies(9, runTask, out);
    const got = read(bodies);
    if (typeof got === 'string') throw new Error(got);
    expect(got.message).toEqual({ t: 'done', id: 9, out });
    expect(bodies.length).toBeGreaterThan(40);
    expect(Math.max(...got.frames)).toBeLessThanOrEqual(PIECE_BYTES + 64 * 1024);
  });

  it('sends an answer within PIECE_BYTES as one frame, and a large respond() body in pieces', () => {
    expect(doneBodies(1, runTask, { value: { results: [] } })).toHaveLength(1);
    const payload = { status: 200, headers: { a: 'b' }, body: 'é'.repeat(1_000_000) };
    const bodies = responseBodies(4, payload)!;
    expect(bodies.length).toBeGreaterThan(5);
    const got = read(bodies);
    if (typeof got === 'string') throw new Error(got);
    expect(got.message).toEqual({ t: 'response', id: 4, payload });
  });

  it('refuses, as a failed run, a value that cannot be cut and is over a frame', () => {
    const out = { value: { results: [{ emits: [{ event: new Map([['k', 'x'.repeat(FRAME_MAX_BYTES)]]), meta: {} }] }] } };
    expect(doneBodies(2, runTask, out).map((b) => deserialize(b))).toEqual([
      { t: 'done', id: 2, out: { failed: { name: 'ResultSizeLimitError', message: expect.stringMatching(/^the result of run cannot be sent back: it holds a value of \d+ bytes that cannot be sent in parts/) } } },
    ]);
  });

  it('refuses, as a failed run, a value held in many places whose pieces would pass the answer\'s bound', () => {
    // 30 levels each holding the same child twice: a small frame, 2^30 places to cut.
    let dag: unknown = 'x'.repeat(300_000);
    for (let i = 0; i < 30; i++) dag = [dag, dag];
    const out = { value: { results: [{ emits: [{ event: dag, meta: {} }] }] } };
    expect(doneBodies(3, runTask, out, 8 << 20).map((b) => deserialize(b))).toEqual([
      { t: 'done', id: 3, out: { failed: { name: 'ResultSizeLimitError', message: expect.stringMatching(/^the result of run cannot be sent back: its parts come to more than 8388608 bytes/) } } },
    ]);
  });

  describe('pieces forged by code in the sandbox', () => {
    /** The answer `pieces` make with `shell` in the final message, or why the first that does not fit does not. */
    const fill = (shell: unknown, ...pieces: Record<string, unknown>[]): unknown => {
      const assembly = new PieceAssembly();
      for (const p of pieces) {
        const checked = checkedFromHost({ t: 'piece', id: 1, ...p });
        if (typeof checked === 'string') return checked;
        const misfit = assembly.add(checked as Piece);
        if (misfit) return misfit;
      }
      return assembly.finish(shell);
    };
    const root = (fields: [string, unknown][]) => ({ path: [], entries: fields });

    it('puts nothing on a prototype, and follows no path that is not own data', () => {
      expect(fill({}, { path: [], entries: [['__proto__', { polluted: true }]] })).toBe('a piece without entries');
      expect(fill({}, { path: ['__proto__'], entries: [['polluted', true]] })).toBe('a piece without a path');
      expect(fill({}, root([['a', []]]), { path: ['constructor'], entries: [['polluted', true]] })).toBe('a piece for no array or object');
      expect(fill({}, root([['a', []]]), { path: ['a', 'length'], entries: [['x', 1]] })).toBe('a piece for no array or object');
      expect(fill({}, { path: ['a'], entries: [['x', 1]] })).toBe('a piece inside an answer that has none yet');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('cannot make an array sparse or set a field twice', () => {
      expect(fill([], { path: [], from: 1_000_000_000, items: ['x'] })).toBe('a piece out of order');
      expect(fill([], { path: [], from: 0, items: ['x'] }, { path: [], entries: [['0', 'x']] })).toBe('a piece of fields for an array');
      expect(fill({}, root([['a', 1]]), { path: [], from: 0, items: ['x'] })).toBe('a piece out of order');
      expect(fill({}, root([['a', 1]]), root([['a', 2]]))).toBe('a piece that sets a field twice');
      expect(fill({}, root([['a', 1]]), { path: ['a'], text: 'x' })).toBe('a piece of text for no string');
      expect(fill([], { path: [], from: 0, items: ['a'] }, { path: [], from: 1, items: ['b'] })).toEqual({ value: ['a', 'b'] });
    });

    it('takes the answer only when the final message holds an empty shell of its kind', () => {
      expect(fill({}, root([['a', 1]]))).toEqual({ value: { a: 1 } });
      expect(fill({ b: 2 }, root([['a', 1]]))).toBe('an answer that does not match its pieces');
      expect(fill([], root([['a', 1]]))).toBe('an answer that does not match its pieces');
      expect(fill('x', { path: [], text: 'abc' })).toBe('an answer that does not match its pieces');
      expect(fill('', { path: [], text: 'abc' })).toEqual({ value: 'abc' });
    });

    it('refuses pieces that are not pieces', () => {
      expect(fill({}, { path: 'a' as never, entries: [] })).toBe('a piece without a path');
      expect(fill({}, { path: Array(65).fill('a'), entries: [] })).toBe('a piece without a path');
      expect(fill({}, { path: [], entries: [['a']] as never })).toBe('a piece without entries');
      expect(fill({}, { path: [-1], entries: [] })).toBe('a piece without a path');
    });
  });
});
