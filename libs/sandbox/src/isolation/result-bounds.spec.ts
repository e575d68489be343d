import type { WorkerTask } from '../worker-protocol';
import { deserialize, serialize } from 'node:v8';
import { DESCRIPTION_MAX_BYTES, doneBodies, resultCapBytes, responseBodies } from './result-bounds';

const bundle = { key: 'k', path: '/code/bundles/x.cjs', format: 'cjs' as const };
const describeTask: WorkerTask = { kind: 'describe', bundle, timeoutMs: 1000 };
const optionsTask: WorkerTask = { kind: 'options', bundle, propName: 'p', input: { page: 0 }, timeoutMs: 1000, maxBytes: 1024 };

describe('result bounds (host side)', () => {
  it('caps each kind of answer', () => {
    expect(resultCapBytes(describeTask)).toBe(DESCRIPTION_MAX_BYTES);
    expect(resultCapBytes(optionsTask)).toBe(2 * 1024 + 64 * 1024);
  });

  const done = (bodies: Buffer[]): unknown => {
    expect(bodies).toHaveLength(1);
    return deserialize(bodies[0]);
  };

  it('passes an answer within its cap unchanged, serialized once as the done message', () => {
    const out = { value: { options: ['a', 'b'] } };
    expect(done(doneBodies(7, optionsTask, out))).toEqual({ t: 'done', id: 7, out });
  });

  it('counts the answer alone, as serialize(out) does, whatever the envelope', () => {
    const out = { value: { options: ['x'.repeat(500)] } };
    const bytes = serialize(out).byteLength;
    expect(done(doneBodies(123_456_789, optionsTask, out, bytes))).toEqual({ t: 'done', id: 123_456_789, out });
    expect(done(doneBodies(1, optionsTask, out, bytes - 1))).toEqual({
      t: 'done',
      id: 1,
      out: { failed: { name: 'ResultSizeLimitError', message: `the answer of options() is ${bytes} bytes, over the ${bytes - 1} bytes a sandbox may send back` } },
    });
  });

  it('measures a string repeated by reference as often as it is serialized', () => {
    const s = 'x'.repeat(1000);
    const out = { value: { options: Array.from({ length: 100 }, () => s) } };
    expect(done(doneBodies(1, optionsTask, out))).toEqual({ t: 'done', id: 1, out: { failed: { name: 'ResultSizeLimitError', message: expect.stringMatching(/^the answer of options\(\) is \d+ bytes, over the 67584 bytes/) } } });
  });

  it('fails an answer nested too deeply to serialize instead of throwing (it ended the sandbox process)', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(done(doneBodies(1, optionsTask, { value: { options: [deep] } }))).toEqual({ t: 'done', id: 1, out: { failed: { name: 'ResultSizeLimitError', message: expect.stringMatching(/^the answer of options\(\) cannot be sent back: .*call stack/) } } });
  });

  it('sends a respond() payload within the cap once serialized, and drops one over it', () => {
    const payload = { status: 200, body: 'y'.repeat(300) };
    const bytes = serialize(payload).byteLength;
    expect(responseBodies(3, payload, bytes)!.map((b) => deserialize(b))).toEqual([{ t: 'response', id: 3, payload }]);
    expect(responseBodies(3, payload, bytes - 1)).toBeUndefined();
  });
});
