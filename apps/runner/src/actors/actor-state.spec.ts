import { withWrites } from './actor-state';

describe('withWrites', () => {
  it('sets and deletes keys without changing the db it was given', () => {
    const db = { a: 1, b: 2 };
    expect(withWrites(db, { a: 3, b: undefined, c: 'x' })).toEqual({ a: 3, c: 'x' });
    expect(db).toEqual({ a: 1, b: 2 });
    expect(withWrites(db, {})).toBe(db);
  });

  it('stores a key `__proto__` as a key, not as the prototype', () => {
    // As v8.deserialize or JSON.parse give it: an own property named __proto__.
    const writes = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as Record<string, unknown>;
    const next = withWrites({}, writes);
    expect(Object.getPrototypeOf(next)).toBe(Object.prototype);
    expect((next as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(next))).toEqual(writes);
    expect(Object.keys(next)).toEqual(['__proto__', 'k']);
  });
});
