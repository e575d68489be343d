import { encodeFrame, encodeFrames, FrameReader } from './frame-channel';

describe('FrameReader', () => {
  const read = (max = 1024, bounded = false) => {
    const got: unknown[] = [];
    const errors: string[] = [];
    const reader = new FrameReader(() => max, (m) => got.push(m), (e) => errors.push(e.message), bounded);
    return { reader, got, errors };
  };

  it('splits frames however the bytes arrive', () => {
    const { reader, got, errors } = read();
    const bytes = encodeFrames([{ t: 'a', n: 1n }, { t: 'b', u: undefined }, 'x'.repeat(100)]);
    for (let i = 0; i < bytes.length; i += 3) reader.push(bytes.subarray(i, i + 3));
    expect(got).toEqual([{ t: 'a', n: 1n }, { t: 'b', u: undefined }, 'x'.repeat(100)]);
    expect(errors).toEqual([]);
  });

  it('refuses a frame longer than its bound as soon as the header is read, and reads nothing after', () => {
    const { reader, got, errors } = read(100);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(0xfffffff0);
    reader.push(head);
    reader.push(encodeFrame('late'));
    expect(errors).toEqual(['the sandbox sent a message of 4294967280 bytes, over the 100 bytes it may send']);
    expect(got).toEqual([]);
  });

  it('refuses a frame that does not deserialize', () => {
    const { reader, errors } = read();
    reader.push(Buffer.from([0, 0, 0, 3, 0xff, 0x0f, 0x99]));
    expect(errors[0]).toMatch(/does not deserialize/);
  });

  it("refuses, when reading a sandbox, a message that unfolds far beyond its frame; a trusted reader takes it", () => {
    // 40 levels each holding the same child twice: a few hundred bytes, 2^40 leaves to JSON.stringify or to a logger.
    let dag: unknown = 'y'.repeat(64);
    for (let i = 0; i < 40; i++) dag = [dag, dag];
    const frame = encodeFrame({ t: 'log', level: 'warn', obj: { dag } });
    expect(frame.byteLength).toBeLessThan(1024);
    const untrusted = read(1024, true);
    untrusted.reader.push(Buffer.concat([frame, encodeFrame('after')]));
    expect(untrusted.errors).toEqual([expect.stringMatching(/^the sandbox sent a message of \d+ bytes that unfolds to more than \d+ values and characters \(shared references\)$/)]);
    expect(untrusted.got).toEqual([]);
    const trusted = read(1024);
    trusted.reader.push(frame);
    expect(trusted.got).toHaveLength(1);
  });

  it('takes, when reading a sandbox, messages without shared references whatever their shape', () => {
    const { reader, got, errors } = read(1 << 20, true);
    const messages = [
      { t: 'done', id: 1, out: { value: { emits: Array.from({ length: 200 }, (_, i) => ({ event: { i, s: 'x'.repeat(i) }, meta: {} })) } } },
      { t: 'done', id: 2, out: { value: { map: new Map([['k', [1, 2, 3]]]), set: new Set(['a']), bytes: Buffer.alloc(5000), deep: [[[[['é'.repeat(300)]]]]] } } },
      { t: 'log', level: 'info', obj: {}, msg: '' },
    ];
    reader.push(encodeFrames(messages));
    expect(errors).toEqual([]);
    expect(got).toHaveLength(3);
  });

  it('with yielding, reads frames that arrived together in turns, and only appends what comes meanwhile', () => {
    const got: unknown[] = [];
    const turns: (() => void)[] = [];
    const reader = new FrameReader(() => 1024, (m) => got.push(m), () => undefined, true, { afterMs: 0, pause: (resume) => turns.push(resume) });
    reader.push(encodeFrames(['a', 'b', 'c']));
    expect([got, reader.waiting, turns.length]).toEqual([['a'], true, 1]);
    reader.push(encodeFrame('d'));
    expect(got).toEqual(['a']);
    turns.shift()!();
    expect(got).toEqual(['a', 'b']);
    while (turns.length) turns.shift()!();
    expect([got, reader.waiting]).toEqual([['a', 'b', 'c', 'd'], false]);
  });

  it('with a budget of messages, waits as long as it says after each message, even with nothing more to read', () => {
    const got: unknown[] = [];
    const waits: number[] = [];
    const turns: (() => void)[] = [];
    let budget = 2;
    const reader = new FrameReader(() => 1024, (m) => got.push(m), () => undefined, true, {
      afterMs: 60_000,
      pause: (resume, waitMs) => {
        waits.push(waitMs);
        turns.push(resume);
      },
      waitMs: () => (--budget >= 0 ? 0 : 10),
    });
    reader.push(encodeFrames(['a', 'b', 'c']));
    expect([got, reader.waiting, waits]).toEqual([['a', 'b', 'c'], true, [10]]);
    reader.push(encodeFrame('d'));
    expect(got).toEqual(['a', 'b', 'c']);
    turns.shift()!();
    expect([got, waits]).toEqual([['a', 'b', 'c', 'd'], [10, 10]]);
  });
});
