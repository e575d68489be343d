import { Deletion, DeletionLanes } from './deletion-lanes';

describe('DeletionLanes', () => {
  const d = (emitterId: string, lastSeq: number, startId?: string): Deletion => ({ emitterId, lastSeq, ...(startId ? { startId } : {}) });

  it("runs an account's deletions one at a time in order, other accounts beside it, and refuses past the waiting bound", async () => {
    const running: string[] = [];
    const done: Deletion[] = [];
    const gates: (() => void)[] = [];
    const lanes = new DeletionLanes(2, async (x) => {
      running.push(x.emitterId);
      await new Promise<void>((r) => gates.push(r));
      done.push(x);
    });
    expect(lanes.offer('u_a', d('dc_1', 1))).toBe(true);
    expect(lanes.offer('u_a', d('dc_2', 2))).toBe(true);
    expect(lanes.offer('u_a', d('dc_3', 3))).toBe(true);
    expect(lanes.offer('u_a', d('dc_4', 4))).toBe(false);
    // Equal to one waiting: joins it, and the newer request's stream end counts.
    expect(lanes.offer('u_a', d('dc_2', 9))).toBe(true);
    expect(lanes.offer('u_b', d('dc_9', 5))).toBe(true);
    expect(running).toEqual(['dc_1', 'dc_9']);
    while (done.length < 4) {
      gates.shift()?.();
      await new Promise((r) => setTimeout(r, 1));
    }
    expect(done.map((x) => [x.emitterId, x.lastSeq])).toEqual([['dc_1', 1], ['dc_9', 5], ['dc_2', 9], ['dc_3', 3]]);
    // The lane is empty again: a new deletion is taken.
    expect(lanes.offer('u_a', d('dc_4', 10))).toBe(true);
    gates.shift()?.();
  });

  it('tells when every deletion taken is done (a graceful stop waits for them), or gives up after its timeout', async () => {
    let release: () => void = () => undefined;
    const done: string[] = [];
    const lanes = new DeletionLanes(4, async (x) => {
      if (x.emitterId === 'dc_slow') await new Promise<void>((r) => (release = r));
      done.push(x.emitterId);
    });
    lanes.offer('u_a', d('dc_slow', 1));
    lanes.offer('u_a', d('dc_2', 2));
    lanes.offer('u_b', d('dc_3', 3));
    await lanes.idle(20);
    expect(done).toEqual(['dc_3']);
    setTimeout(() => release(), 10);
    await lanes.idle(5_000);
    expect(done.sort()).toEqual(['dc_2', 'dc_3', 'dc_slow']);
  });

  it('goes on after a deletion that failed', async () => {
    const done: string[] = [];
    const lanes = new DeletionLanes(4, async (x) => {
      if (x.emitterId === 'dc_bad') throw new Error('NATS unavailable');
      done.push(x.emitterId);
    });
    lanes.offer('u_a', d('dc_bad', 1));
    lanes.offer('u_a', d('dc_ok', 2));
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toEqual(['dc_ok']);
  });
});
