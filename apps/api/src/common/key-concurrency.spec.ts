import { KeyConcurrency } from './key-concurrency';

describe('KeyConcurrency', () => {
  it('runs up to the limit per key at once and hands turns to the waiting in order', async () => {
    const k = new KeyConcurrency(2, 1_000);
    const a1 = await k.acquire('a');
    const a2 = await k.acquire('a');
    const order: string[] = [];
    const a3 = k.acquire('a').then((r) => (order.push('a3'), r));
    const a4 = k.acquire('a').then((r) => (order.push('a4'), r));
    // Another key is not held back by a's queue.
    expect(await k.acquire('b')).toBeDefined();
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual([]);
    a1!();
    a1!(); // a second call frees nothing more
    expect(await a3).toBeDefined();
    expect(order).toEqual(['a3']);
    a2!();
    expect(await a4).toBeDefined();
    expect(order).toEqual(['a3', 'a4']);
  });

  it('refuses a request that waited too long, and forgets a key with nothing running', async () => {
    const k = new KeyConcurrency(1, 20);
    const first = await k.acquire('a');
    expect(await k.acquire('a')).toBeUndefined();
    first!();
    expect(k.activeKeys).toBe(0);
    expect(await new KeyConcurrency(1, 0).acquire('x').then(() => 'ok')).toBe('ok');
  });
});
