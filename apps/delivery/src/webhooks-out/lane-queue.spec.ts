import { DIRECT_LANE_DRAIN_MS, DIRECT_LANE_MIN, DIRECT_SHARE, directLaneMax, LaneQueue } from './lane-queue';

describe('LaneQueue', () => {
  const takeAll = (q: LaneQueue<string>): string[] => {
    const out: string[] = [];
    for (let m = q.shift(); m !== undefined; m = q.shift()) out.push(m);
    return out;
  };

  it('keeps each queue in order and gives direct events DIRECT_SHARE of every DIRECT_SHARE + 1 slots while both wait', () => {
    const q = new LaneQueue<string>();
    const directs = Array.from({ length: 2 * DIRECT_SHARE + 2 }, (_, i) => `d${i}`);
    directs.forEach((d) => q.push(d, true));
    ['s0', 's1', 's2'].forEach((s) => q.push(s, false));
    expect(q.length).toBe(directs.length + 3);
    expect(q.directLength).toBe(directs.length);
    const order = takeAll(q);
    expect(order.filter((x) => x.startsWith('d'))).toEqual(directs);
    expect(order.filter((x) => x.startsWith('s'))).toEqual(['s0', 's1', 's2']);
    // A message is never passed over by more than DIRECT_SHARE direct events.
    expect(order.indexOf('s0')).toBe(DIRECT_SHARE);
    expect(order.indexOf('s1')).toBe(2 * DIRECT_SHARE + 1);
    expect(q.length).toBe(0);
  });

  it('serves one kind alone in order when the other is empty', () => {
    const q = new LaneQueue<string>();
    ['s0', 's1', 's2'].forEach((s) => q.push(s, false));
    expect(takeAll(q)).toEqual(['s0', 's1', 's2']);
    ['d0', 'd1', 'd2', 'd3', 'd4'].forEach((d) => q.push(d, true));
    expect(takeAll(q)).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
  });

  it('returns the excess newest first from the messages, then from the direct events, and drains everything', () => {
    const q = new LaneQueue<string>();
    ['d0', 'd1', 'd2'].forEach((d) => q.push(d, true));
    ['s0', 's1'].forEach((s) => q.push(s, false));
    expect(q.excess(5)).toEqual([]);
    expect(q.excess(2).sort()).toEqual(['d2', 's0', 's1']);
    expect(q.drain()).toEqual(['d0', 'd1']);
    expect(q.length).toBe(0);
  });

  it('gives a webhook room for what it drains in DIRECT_LANE_DRAIN_MS, at least DIRECT_LANE_MIN, never more than the bound', () => {
    // 32 requests at a time for 5 s: 80 ms each drain 2,000; 5 ms each 32,000, held to the bound of 5,000.
    expect(DIRECT_LANE_DRAIN_MS).toBe(5000);
    expect(directLaneMax(80, 32, 5000)).toBe(2000);
    expect(directLaneMax(5, 32, 5000)).toBe(5000);
    expect(directLaneMax(200, 32, 5000)).toBe(DIRECT_LANE_MIN);
    // A lane that has not answered yet (average 0) is not divided by zero.
    expect(directLaneMax(0, 32, 5000)).toBe(5000);
  });
});
