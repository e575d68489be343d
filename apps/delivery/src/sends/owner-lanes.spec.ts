import { OwnerLanes } from './owner-lanes';

/** Items that finish when the test says so. */
function lanes(room = { concurrency: 4, perOwner: 2, waitingPerOwner: 3, waitingMax: 5 }) {
  const running: { owner: string; n: number; done: () => void }[] = [];
  const l = new OwnerLanes<{ owner: string; n: number }>(room, (item) => new Promise<void>((done) => running.push({ ...item, done })));
  const offer = (owner: string, n: number) => l.offer(owner, { owner, n });
  return { l, running, offer };
}
const settle = () => new Promise((r) => setImmediate(r));

describe('OwnerLanes (workflow sends: each account its slots)', () => {
  it('runs at most perOwner of an owner at once, and gives the other slots to other owners in turn', async () => {
    const { running, offer } = lanes();
    for (let n = 0; n < 5; n++) expect(offer('a', n)).toBe(n < 5);
    // a: 2 running, 3 waiting; its sixth would be refused.
    expect(offer('a', 5)).toBe(false);
    expect(offer('b', 0)).toBe(true);
    expect(offer('c', 0)).toBe(true);
    expect(running.map((r) => `${r.owner}${r.n}`)).toEqual(['a0', 'a1', 'b0', 'c0']);
    running[0].done();
    await settle();
    expect(running.map((r) => `${r.owner}${r.n}`)).toEqual(['a0', 'a1', 'b0', 'c0', 'a2']);
  });

  it('takes turns between owners with waiting items when a slot frees', async () => {
    const { running, offer } = lanes({ concurrency: 1, perOwner: 1, waitingPerOwner: 10, waitingMax: 100 });
    offer('a', 0);
    offer('a', 1);
    offer('a', 2);
    offer('b', 0);
    const order = async (): Promise<string[]> => {
      const seen: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = running[running.length - 1];
        seen.push(`${r.owner}${r.n}`);
        r.done();
        await settle();
      }
      return seen;
    };
    expect(await order()).toEqual(['a0', 'b0', 'a1', 'a2']);
  });

  it('past waitingMax, still lets in an owner with nothing waiting and a free slot, and refuses the rest', () => {
    const { offer } = lanes({ concurrency: 1, perOwner: 1, waitingPerOwner: 10, waitingMax: 2 });
    expect([offer('a', 0), offer('a', 1), offer('a', 2)]).toEqual([true, true, true]);
    // a runs one and has two waiting: waitingMax reached.
    expect(offer('a', 3)).toBe(false);
    expect(offer('b', 0)).toBe(true);
    expect(offer('b', 1)).toBe(false);
  });

  it('hands back what waits when drained', () => {
    const { l, offer } = lanes({ concurrency: 1, perOwner: 1, waitingPerOwner: 10, waitingMax: 10 });
    offer('a', 0);
    offer('a', 1);
    offer('b', 0);
    expect(l.drain().map((i) => `${i.owner}${i.n}`)).toEqual(['a1', 'b0']);
    expect(l.running).toBe(1);
  });
});
