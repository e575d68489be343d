import { CommandContext } from './command';
import { printObservation } from './live';
import { EventSummary } from './sources';

const printed = (e: EventSummary): string => {
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    printObservation(new CommandContext({}, false), e);
  } finally {
    spy.mockRestore();
  }
  return lines.join('');
};

describe('printObservation', () => {
  it('prints a workflow log line with the step that wrote it', () => {
    const line = printed({ id: '1763930000000-0', indexed_at_ms: 1763930000000, metadata: { name: '$logs' }, event: { ts: 1763930000000, k: 'console.log', msg: 'step saw 1', step: 'first', run_id: 'inv_1' } });
    expect(line).toBe('2025-11-23T20:33:20.000Z log   [first] step saw 1\n');
  });

  it('prints a source log line (no step) as before', () => {
    expect(printed({ id: '1-0', indexed_at_ms: 1763930000000, metadata: { name: '$logs' }, event: { ts: 1763930000000, k: 'console.warn', msg: 'slow' } })).toBe('2025-11-23T20:33:20.000Z warn  slow\n');
  });

  it('ends an error line with the $errors event id, which pd replay takes', () => {
    const line = printed({
      id: '1763930000000-3',
      indexed_at_ms: 1763930000000,
      metadata: { name: '$errors' },
      event: { original_event: {}, error: { code: 'Error', cellId: 'c_1', ts: '2025-11-23T20:33:20.000Z', stack: 'Error: asked to fail\n    at run (first.mjs:5:11)' } },
    });
    expect(line.split('\n')[0]).toBe('2025-11-23T20:33:20.000Z error Error: asked to fail (event 1763930000000-3)');
  });
});
