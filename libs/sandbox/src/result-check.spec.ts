import { checkedExecuteResult, checkedResponse } from './result-check';

const limits = { dbMaxBytes: 1000, eventMaxBytes: 100, emitsPerInvocation: 2 };
const base = { emits: [], dbWrites: {}, logs: [], durationMs: 1 };
const cyclic = (): Record<string, unknown> => {
  const o: Record<string, unknown> = {};
  o.self = o;
  return o;
};

describe('checkedExecuteResult (the app checks a run again with its own JSON)', () => {
  it('keeps a result within the limits as it is', async () => {
    const r = { ...base, emits: [{ event: { a: 1 }, meta: { id: 'x' } }], dbWrites: { k: 1, gone: undefined }, logs: [{ ts: 1, k: 'log', msg: 'hi' }] };
    expect(await checkedExecuteResult(r, limits)).toEqual(r);
  });

  it.each([
    ['a BigInt', { big: 1n }, /BigInt/],
    ['a cycle', cyclic(), /circular/],
  ])('drops an emit holding %s (and later ones), with the error the sandbox would have given', async (_what, event, message) => {
    const r = await checkedExecuteResult({ ...base, emits: [{ event: { ok: 1 }, meta: {} }, { event, meta: {} }, { event: { ok: 2 }, meta: {} }] }, limits);
    expect(r.emits).toEqual([{ event: { ok: 1 }, meta: {} }]);
    expect(r.error).toEqual({ name: 'TypeError', message: expect.stringMatching(message) });
  });

  it.each([
    ['a channel name over 255 characters', 'c'.repeat(256), /at most 255 characters, got 256/],
    ['the $errors channel', '$errors', /must not start with \$/],
    ['the $logs channel', '$logs', /must not start with \$/],
    ['a reserved $ channel', '$custom', /must not start with \$/],
    ['a channel name that is not a string', 5, /must be a string, got number/],
  ])('drops an emit on %s (and later ones): only the platform writes $ channels, and a name must fit its column', async (_what, name, message) => {
    const big = { ...limits, eventMaxBytes: 1000 };
    const r = await checkedExecuteResult({ ...base, emits: [{ event: 1, meta: { name: 'c'.repeat(255) } }, { event: 2, meta: { name } }, { event: 3, meta: {} }] }, big);
    expect(r.emits).toEqual([{ event: 1, meta: { name: 'c'.repeat(255) } }]);
    expect(r.error).toEqual({ name: 'TypeError', message: expect.stringMatching(message) });
  });

  it('hands the event loop back while it checks a large result, emit by emit', async () => {
    const pad = 'x'.repeat(200_000);
    const emits = Array.from({ length: 300 }, (_, i) => ({ event: { i, pad }, meta: {} }));
    const order: string[] = [];
    setTimeout(() => order.push('timer'), 0);
    await Promise.resolve(checkedExecuteResult({ ...base, emits }, { ...limits, eventMaxBytes: 1e6, emitsPerInvocation: 1000 })).then((r) => order.push(`checked ${r.emits.length}`));
    expect(order).toEqual(['timer', 'checked 300']);
  });

  it('enforces the event size (with meta) and the emit count', async () => {
    expect((await checkedExecuteResult({ ...base, emits: [{ event: { s: 'x'.repeat(200) }, meta: {} }] }, limits)).error?.name).toBe('EventSizeLimitError');
    expect((await checkedExecuteResult({ ...base, emits: [{ event: 1, meta: { summary: 'x'.repeat(200) } }] }, limits)).error?.name).toBe('EventSizeLimitError');
    const many = await checkedExecuteResult({ ...base, emits: [1, 2, 3].map((n) => ({ event: n, meta: {} })) }, limits);
    expect([many.emits.length, many.error?.name]).toEqual([2, 'EmitLimitError']);
  });

  it('discards db writes that are not JSON, and keeps the first error', async () => {
    const r = await checkedExecuteResult({ ...base, dbWrites: { k: 1n }, error: { name: 'Boom', message: 'first' } }, limits);
    expect([r.dbWrites, r.error]).toEqual([{}, { name: 'Boom', message: 'first' }]);
  });

  it('answers something that is not a result with a SandboxProtocolError', async () => {
    expect((await checkedExecuteResult('x', limits)).error?.name).toBe('SandboxProtocolError');
    expect(await checkedExecuteResult({ emits: 'x', logs: 5 }, limits)).toEqual({ emits: [], dbWrites: {}, logs: [], durationMs: 0 });
  });

  it('checks an action\'s return value, exports and sends', async () => {
    const r = await checkedExecuteResult({ ...base, returnValue: 1n, exports: { a: 1, b: 'x'.repeat(200) }, sends: [{ kind: 'http', payload: {} }, { kind: 'nope', payload: {} }] }, limits);
    expect([r.returnValue, r.exports, r.sends]).toEqual([undefined, { a: 1 }, [{ kind: 'http', payload: {} }]]);
    expect(r.error?.name).toBe('TypeError');
  });
});

describe('checkedResponse', () => {
  it('keeps a well-formed response and refuses others', async () => {
    expect(checkedResponse({ status: 200, headers: { 'set-cookie': ['a=1', 'b=2'], x: 'y' }, body: 'hi', bodyEncoding: 'utf8' })).toEqual({ status: 200, headers: { 'set-cookie': ['a=1', 'b=2'], x: 'y' }, body: 'hi', bodyEncoding: 'utf8' });
    for (const bad of [null, { status: 99 }, { status: 200, headers: { 'a b': 'x' } }, { status: 200, headers: { x: 'a\r\nb' } }, { status: 200, body: 1 }, { status: 200, headers: { x: 1 } }]) {
      expect(checkedResponse(bad)).toBeUndefined();
    }
  });

  it('refuses headers over the bounds respond() checks in the sandbox (100 lines, 8 KiB), and keeps them at the bounds', () => {
    const many = (n: number, value = 'v') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${String(i).padStart(3, '0')}`, value]));
    expect(checkedResponse({ status: 200, headers: many(100) })?.headers).toEqual(many(100));
    expect(checkedResponse({ status: 200, headers: many(101) })).toBeUndefined();
    expect(checkedResponse({ status: 200, headers: { 'set-cookie': Array.from({ length: 101 }, (_, i) => `c${i}=1`) } })).toBeUndefined();
    // "x: " + value + CRLF: 8,192 bytes is the bound.
    expect(checkedResponse({ status: 200, headers: { x: 'a'.repeat(8192 - 5) } })).toBeDefined();
    expect(checkedResponse({ status: 200, headers: { x: 'a'.repeat(8192 - 4) } })).toBeUndefined();
    expect(checkedResponse({ status: 200, headers: { x: 'a'.repeat(900 * 1024) } })).toBeUndefined();
  });
});
