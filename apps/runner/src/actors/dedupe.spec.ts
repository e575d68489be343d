import { applyDedupe, UNIQUE_CACHE_SIZE } from './dedupe';

const c = (...ids: (string | number | undefined)[]) => ids.map((id) => ({ item: `ev-${id}`, id }));

describe('dedupe strategies', () => {
  it('unique emits new ids once and keeps the last 100 ids FIFO', () => {
    let r = applyDedupe('unique', c(1, 2, 2, 3), {});
    expect(r.emitted).toEqual(['ev-1', 'ev-2', 'ev-3']);
    r = applyDedupe('unique', c(3, 4), r.state);
    expect(r.emitted).toEqual(['ev-4']);
    const many = Array.from({ length: UNIQUE_CACHE_SIZE }, (_, i) => 100 + i);
    r = applyDedupe('unique', c(...many), r.state);
    expect(r.state.unique).toHaveLength(UNIQUE_CACHE_SIZE);
    // id 1 was purged first-in first-out: emitted again; 150 is still cached.
    expect(applyDedupe('unique', c(1, 150), r.state).emitted).toEqual(['ev-1']);
  });

  it('greatest emits only larger numeric ids and rejects non-numeric ones', () => {
    const r = applyDedupe('greatest', c(5, 3, '7', 7, 'abc'), { greatest: 4 });
    expect(r.emitted).toEqual(['ev-5', 'ev-7']);
    expect(r.state.greatest).toBe(7);
    expect(r.rejected.map((x) => x.item)).toEqual(['ev-abc']);
  });

  it('greatest compares integer ids beyond 2^53 exactly and keeps them as text', () => {
    let r = applyDedupe('greatest', c('1794219538729349120', '1794219538729349121', 5), {});
    expect(r.emitted).toEqual(['ev-1794219538729349120', 'ev-1794219538729349121']);
    expect(r.state.greatest).toBe('1794219538729349121');
    r = applyDedupe('greatest', c('1794219538729349121', '1794219538729349122', 1.5), r.state);
    expect(r.emitted).toEqual(['ev-1794219538729349122']);
    r = applyDedupe('greatest', c(2.5, 3, '3.5'), { greatest: 2 });
    expect(r.emitted).toEqual(['ev-2.5', 'ev-3', 'ev-3.5']);
    expect(r.state.greatest).toBe(3.5);
  });

  it('last emits only the events after the cached id, all when none matches, and caches the newest', () => {
    let r = applyDedupe('last', c('a', 'b', 'c'), {});
    expect(r.emitted).toEqual(['ev-a', 'ev-b', 'ev-c']);
    expect(r.state.last).toBe('c');
    r = applyDedupe('last', c('b', 'c', 'd', 'e'), r.state);
    expect(r.emitted).toEqual(['ev-d', 'ev-e']);
    expect(r.state.last).toBe('e');
    r = applyDedupe('last', c('x', 'y'), r.state);
    expect(r.emitted).toEqual(['ev-x', 'ev-y']);
    r = applyDedupe('last', c('x', 'y'), r.state);
    expect(r.emitted).toEqual([]);
    expect(r.changed).toBe(false);
  });

  it('reports events without an id instead of dropping them silently', () => {
    const r = applyDedupe('unique', c('a', undefined, ''), {});
    expect(r.emitted).toEqual(['ev-a']);
    expect(r.rejected).toHaveLength(2);
    expect(r.rejected[0].reason).toMatch(/needs an id/);
  });

  it('without a strategy every event is emitted', () => {
    expect(applyDedupe(undefined, c(1, 1, undefined), {}).emitted).toHaveLength(3);
  });
});

describe('dedupe ids of hostile length', () => {
  const long = 'x'.repeat(400_000);
  it('caches a long id as its hash, which still dedupes it', () => {
    const first = applyDedupe('unique', [{ item: 1, id: `${long}a` }], {});
    expect(first.emitted).toEqual([1]);
    expect(first.state.unique).toEqual([expect.stringMatching(/^sha256:[0-9a-f]{64}$/)]);
    expect(applyDedupe('unique', [{ item: 2, id: `${long}a` }, { item: 3, id: `${long}b` }], first.state).emitted).toEqual([3]);
    const last = applyDedupe('last', [{ item: 1, id: `${long}a` }, { item: 2, id: `${long}b` }], {});
    expect(last.state.last).toMatch(/^sha256:/);
    expect(applyDedupe('last', [{ item: 1, id: `${long}a` }, { item: 2, id: `${long}b` }, { item: 3, id: 'c' }], last.state).emitted).toEqual([3]);
  });

  it('takes no numeric id of more than 256 characters under greatest', () => {
    const out = applyDedupe('greatest', [{ item: 1, id: '9'.repeat(300) }], {});
    expect(out.emitted).toEqual([]);
    expect(out.rejected[0].reason.length).toBeLessThan(300);
    expect(out.state.greatest).toBeUndefined();
  });
});
