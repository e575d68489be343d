import type { WorkerTask } from '../worker-protocol';
import { boundedOutcome, DESCRIPTION_MAX_BYTES, resultCapBytes } from './result-bounds';

const bundle = { key: 'k', path: '/code/bundles/x.cjs', format: 'cjs' as const };
const describeTask: WorkerTask = { kind: 'describe', bundle, timeoutMs: 1000 };
const optionsTask: WorkerTask = { kind: 'options', bundle, propName: 'p', input: { page: 0 }, timeoutMs: 1000, maxBytes: 1024 };

describe('result bounds (host side)', () => {
  it('caps each kind of answer', () => {
    expect(resultCapBytes(describeTask)).toBe(DESCRIPTION_MAX_BYTES);
    expect(resultCapBytes(optionsTask)).toBe(2 * 1024 + 64 * 1024);
  });

  it('passes an answer within its cap unchanged', () => {
    const out = { value: { options: ['a', 'b'] } };
    expect(boundedOutcome(optionsTask, out)).toBe(out);
  });

  it('measures a string repeated by reference as often as it is serialized', () => {
    const s = 'x'.repeat(1000);
    const out = { value: { options: Array.from({ length: 100 }, () => s) } };
    expect(boundedOutcome(optionsTask, out)).toEqual({ failed: { name: 'ResultSizeLimitError', message: expect.stringMatching(/^the answer of options\(\) is \d+ bytes, over the 67584 bytes/) } });
  });

  it('fails an answer nested too deeply to serialize instead of throwing (it ended the sandbox process)', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(boundedOutcome(optionsTask, { value: { options: [deep] } })).toEqual({ failed: { name: 'ResultSizeLimitError', message: expect.stringMatching(/^the answer of options\(\) cannot be sent back: .*call stack/) } });
  });
});
