import { BatchWriter } from './batch-writer';

describe('BatchWriter', () => {
  it('writes what was added together in batches of at most maxItems, in order', async () => {
    const writes: number[][] = [];
    const writer = new BatchWriter<number>(async (items) => void writes.push(items), { maxItems: 3, lingerMs: 5 });
    await Promise.all([1, 2, 3, 4, 5].map((n) => writer.add(n)));
    expect(writes).toEqual([[1, 2, 3], [4, 5]]);
  });

  it('rejects every add of a failed batch, and later batches still go through', async () => {
    let fail = true;
    const writer = new BatchWriter<string>(async () => {
      if (fail) throw new Error('db down');
    }, { maxItems: 10, lingerMs: 1 });
    const failed = await Promise.allSettled([writer.add('a'), writer.add('b')]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(writer.add('c')).resolves.toBeUndefined();
  });

  it('flushNow writes everything added so far without waiting out the linger, and resolves once it is written', async () => {
    const writes: number[][] = [];
    const writer = new BatchWriter<number>(async (items) => {
      await new Promise((r) => setTimeout(r, 5));
      writes.push(items);
    }, { maxItems: 2, lingerMs: 60_000 });
    const added = [1, 2, 3, 4, 5].map((n) => writer.add(n));
    await writer.flushNow();
    expect(writes).toEqual([[1, 2], [3, 4], [5]]);
    await expect(Promise.all(added)).resolves.toHaveLength(5);
    await expect(writer.flushNow()).resolves.toBeUndefined();
  });
});
