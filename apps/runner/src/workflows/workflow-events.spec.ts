import { emitOf, stepsWithin } from './workflow-events';
import type { StepRecord } from './workflow-run';

describe('the run record of a workflow run', () => {
  it('keeps every step but replaces its largest values until the record fits one event', () => {
    const steps: StepRecord[] = Array.from({ length: 20 }, (_, i) => ({ name: `s${i}`, cell_id: `c_${i}`, duration_ms: 1, inputs: { n: i }, return_value: 'x'.repeat(1000), exports: {} }));
    const fitted = stepsWithin(steps, 5000);
    expect(Buffer.byteLength(JSON.stringify(fitted))).toBeLessThanOrEqual(5000);
    expect(fitted.map((s) => s.name)).toEqual(steps.map((s) => s.name));
    expect(fitted.filter((s) => JSON.stringify(s.return_value) === JSON.stringify({ $truncated: 1002 })).length).toBeGreaterThan(0);
    expect(fitted[19].inputs).toEqual({ n: 19 });
    const small = steps.slice(0, 2);
    expect(stepsWithin(small, 5000)).toBe(small);
  });
});

describe('$.send.emit(payload) as a workflow emit', () => {
  it('wraps any value as { raw_event } and takes { raw_event, name } as it is', () => {
    expect(emitOf({ a: 1 })).toEqual({ event: { raw_event: { a: 1 } }, name: '' });
    expect(emitOf([1])).toEqual({ event: { raw_event: [1] }, name: '' });
    expect(emitOf({ raw_event: 'x', name: 'ch' })).toEqual({ event: { raw_event: 'x' }, name: 'ch' });
  });

  it('keeps raw_event in the stored JSON when the payload or its raw_event is undefined', () => {
    for (const payload of [undefined, null, { raw_event: undefined }, { raw_event: null }]) {
      expect(JSON.parse(JSON.stringify(emitOf(payload).event))).toEqual({ raw_event: null });
    }
  });
});
