import { serialize } from 'node:v8';
import { unfoldingBudget, unfoldsWithin } from './unfolding';

describe('unfoldsWithin', () => {
  it('counts every value, character, key, array slot and byte of binary data', () => {
    expect(unfoldsWithin('abc', 4)).toBe(true);
    expect(unfoldsWithin('abc', 3)).toBe(false);
    // The object, its key `ab`, the value 1.
    expect(unfoldsWithin({ ab: 1 }, 4)).toBe(true);
    expect(unfoldsWithin({ ab: 1 }, 3)).toBe(false);
    expect(unfoldsWithin(new Uint8Array(100), 101)).toBe(true);
    expect(unfoldsWithin(new Uint8Array(100), 100)).toBe(false);
    expect(unfoldsWithin(new Map([['k', 'v']]), 5)).toBe(true);
    expect(unfoldsWithin(new Set(['a', 'b']), 4)).toBe(false);
  });

  it('refuses a sparse array by its length, without visiting its slots', () => {
    const sparse: unknown[] = [];
    sparse.length = 1e9;
    sparse[5] = 'x';
    expect(serialize(sparse).byteLength).toBeLessThan(32);
    const started = process.hrtime.bigint();
    expect(unfoldsWithin(sparse, unfoldingBudget(32))).toBe(false);
    expect(process.hrtime.bigint() - started).toBeLessThan(1_000_000_000n);
  });

  it('refuses shared references that grow a small message, and stops as soon as the budget is spent', () => {
    let dag: unknown = 'y';
    for (let i = 0; i < 60; i++) dag = { a: dag, b: dag };
    expect(unfoldsWithin(dag, unfoldingBudget(serialize(dag).byteLength))).toBe(false);
  });

  it('takes any tree within twice its serialized size', () => {
    const trees: unknown[] = [
      null,
      0,
      '',
      { a: [1, 2, { b: 'c'.repeat(1000) }], d: true, e: null, f: 1.5e300 },
      Array.from({ length: 1000 }, (_, i) => ({ i })),
      [[], {}, [[]], 'ü'.repeat(500)],
      { s: '日本'.repeat(400) },
    ];
    for (const t of trees) expect(unfoldsWithin(t, unfoldingBudget(serialize(t).byteLength))).toBe(true);
  });
});
