import { checkedFromHost, logFields } from './host-messages';

describe("a sandbox's log lines as the app logs them", () => {
  it("keeps the host's plain fields", () => {
    expect(logFields({ task: 'execute', timeout_ms: 3000, err: 'boom', ok: false, none: null })).toEqual({ task: 'execute', timeout_ms: 3000, err: 'boom', ok: false, none: null });
  });

  it("drops nested values, the app's own fields, odd names and whatever is past 16 fields; shortens long strings", () => {
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, i]));
    expect(Object.keys(logFields(many))).toHaveLength(16);
    expect(logFields({ nested: { a: 1 }, list: [1], level: 60, time: 0, msg: 'x', account: 'other', pid: 1, hostname: 'h', 'a b': 1, __proto__x: 1, big: 1n, nan: NaN })).toEqual({});
    expect((logFields({ long: 'x'.repeat(5000) }).long as string).length).toBe(2000);
    expect(logFields('not an object')).toEqual({});
  });

  it('a log message carries only those fields', () => {
    expect(checkedFromHost({ t: 'log', level: 'warn', obj: { level: 10, forged: 'yes', deep: { x: 1 } }, msg: 'hi' })).toEqual({ t: 'log', level: 'warn', obj: { forged: 'yes' }, msg: 'hi' });
  });
});
