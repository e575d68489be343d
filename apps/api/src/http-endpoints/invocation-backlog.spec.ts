import { sampleSeqs } from './invocation-backlog';

describe('sampleSeqs (the messages of the router backlog read by back-pressure)', () => {
  it('takes every sequence of a backlog no longer than the samples', () => {
    expect(sampleSeqs(5, 9, 32)).toEqual([5, 6, 7, 8, 9]);
    expect(sampleSeqs(1, 32, 32)).toHaveLength(32);
    expect(sampleSeqs(10, 9, 32)).toEqual([]);
  });

  it('takes at most the samples, spread evenly over a longer backlog, within it', () => {
    for (const [first, last] of [[1, 33], [7, 1000], [123_456, 9_999_999], [1, 1 << 20]]) {
      const seqs = sampleSeqs(first, last, 32);
      expect(seqs.length).toBeLessThanOrEqual(32);
      expect(seqs.length).toBeGreaterThanOrEqual(14);
      expect(seqs.every((s) => s >= first && s <= last)).toBe(true);
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
      // No gap longer than a few cells' worth.
      const gaps = seqs.slice(1).map((s, i) => s - seqs[i]);
      expect(Math.max(...gaps)).toBeLessThan(((last - first + 1) / 32) * 5);
    }
  });

  it('finds most of its samples again once the backlog moved on, and samples both phases of a regular pattern', () => {
    const before = sampleSeqs(1_000, 1_999, 32);
    const after = new Set(sampleSeqs(1_100, 2_099, 32));
    expect(before.filter((s) => after.has(s)).length).toBeGreaterThanOrEqual(before.length * 0.8);
    const odd = sampleSeqs(1, 1_000, 32).filter((s) => s % 2 === 1).length;
    expect(odd).toBeGreaterThan(4);
    expect(odd).toBeLessThan(sampleSeqs(1, 1_000, 32).length - 4);
  });
});
