import { createHash } from 'node:crypto';
import type { ExecuteTask } from '../types';

/** Builds an ExecuteTask for test code with sensible limits. */
export function task(code: string, overrides: Partial<ExecuteTask> = {}): ExecuteTask {
  return {
    kind: 'execute',
    sourceId: 'dc_test',
    invocationId: `inv_${Math.random().toString(36).slice(2)}`,
    codeHash: createHash('sha256').update(code).digest('hex'),
    code,
    method: 'run',
    props: {},
    db: {},
    event: { hello: 'world' },
    timeoutMs: 5000,
    limits: { dbMaxBytes: 1024 * 1024, eventMaxBytes: 512 * 1024, emitsPerInvocation: 10_000 },
    ...overrides,
  };
}
