import { BoundedLane, LaneFullError } from './bounded-lane';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('BoundedLane', () => {
  it('runs at most `concurrency` tasks at once, the others in the order they came', async () => {
    const lane = new BoundedLane(2, 10);
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((g, i) => lane.run(async () => (started.push(i), await g.promise, i)));
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    expect(lane.size).toEqual({ running: 2, waiting: 2 });
    gates[1].resolve();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates.forEach((g) => g.resolve());
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(lane.size).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a task at once when `maxWaiting` already wait, and gives a failed task its slot back', async () => {
    const lane = new BoundedLane(1, 1);
    const gate = deferred();
    const first = lane.run(() => gate.promise);
    const second = lane.run(async () => 'second');
    await expect(lane.run(async () => 'third')).rejects.toBeInstanceOf(LaneFullError);
    gate.resolve();
    await first;
    expect(await second).toBe('second');
    await expect(lane.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await lane.run(async () => 'after')).toBe('after');
    expect(lane.size).toEqual({ running: 0, waiting: 0 });
  });
});
