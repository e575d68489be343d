import { encodeFrame, encodeFrames, FrameReader } from './frame-channel';

describe('FrameReader', () => {
  const read = (max = 1024) => {
    const got: unknown[] = [];
    const errors: string[] = [];
    const reader = new FrameReader(() => max, (m) => got.push(m), (e) => errors.push(e.message));
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
});
