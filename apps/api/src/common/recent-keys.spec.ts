import { RecentKeys } from './recent-keys';

describe('RecentKeys', () => {
  it('remembers a key until it expires', () => {
    const keys = new RecentKeys(10);
    keys.add('a', 1_000);
    keys.add('b');
    expect(keys.has('a', 999)).toBe(true);
    expect(keys.has('a', 1_000)).toBe(false);
    expect(keys.has('b', Number.MAX_SAFE_INTEGER)).toBe(true);
    keys.delete('b');
    expect(keys.has('b')).toBe(false);
  });

  it('forgets the key remembered longest ago past `max`, a key added again counting as the most recent', () => {
    const keys = new RecentKeys(2);
    keys.add('a');
    keys.add('b');
    keys.add('a');
    keys.add('c');
    expect(['a', 'b', 'c'].filter((k) => keys.has(k))).toEqual(['a', 'c']);
  });
});
