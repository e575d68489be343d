import { stepsWithin } from './workflow-events';
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
