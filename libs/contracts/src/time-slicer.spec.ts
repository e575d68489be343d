import { mapSliced, SLICE_MS, TimeSlicer } from './time-slicer';

const busy = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('TimeSlicer', () => {
  it('lets the timers and I/O waiting run between the steps of a long job', async () => {
    const order: string[] = [];
    setTimeout(() => order.push('timer'), 0);
    const out = await mapSliced([1, 2, 3, 4, 5, 6], (n) => {
      busy(SLICE_MS / 2);
      order.push(`step ${n}`);
      return n * 2;
    });
    expect(out).toEqual([2, 4, 6, 8, 10, 12]);
    // The timer ran after the first SLICE_MS of work, not after the whole job.
    expect(order.indexOf('timer')).toBeGreaterThan(0);
    expect(order.indexOf('timer')).toBeLessThan(order.length - 1);
  });

  it('never hands back during a short job', async () => {
    // A clock of the test's: on a loaded machine the process may lose a time slice of 10 ms between two steps.
    let clock = 0;
    const slicer = new TimeSlicer(() => clock);
    expect(slicer.due()).toBe(false);
    clock = SLICE_MS - 1;
    const order: string[] = [];
    setImmediate(() => order.push('immediate'));
    await mapSliced([1, 2, 3], (n) => order.push(`step ${n}`), slicer);
    expect(order).toEqual(['step 1', 'step 2', 'step 3']);
  });
});
