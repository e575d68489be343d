import { randomBytes } from 'node:crypto';
import { decodeCursor, encodeCursor, finishPage, keysetClause, parsePageQuery, signedCursor } from './pagination';

const secretsKey = randomBytes(32);
const sources = { list: 'sources:u_a', secretsKey };
import { mergeInput } from './input';

describe('pagination parameters', () => {
  it('defaults to 10 and accepts 1 to 100', () => {
    expect(parsePageQuery({}).limit).toBe(10);
    expect(parsePageQuery({ limit: '1' }).limit).toBe(1);
    expect(parsePageQuery({ limit: 100 }).limit).toBe(100);
  });

  it.each(['0', '101', '-1', 'ten', '1.5'])('refuses limit=%s with a message', (limit) => {
    expect(() => parsePageQuery({ limit })).toThrow('limit must be an integer from 1 to 100');
  });

  it('refuses after and before together, and a cursor this list never returned', () => {
    const c = signedCursor({ k: 1, id: 'dc_a' }, sources);
    expect(() => parsePageQuery({ after: c, before: c })).toThrow(/either after or before/);
    expect(keysetClause({ limit: 10, before: c }, 'k', 'id', sources).params).toEqual([1, 'dc_a']);
    for (const forged of [
      'garbage',
      // Made by hand, unsigned or with a made-up MAC.
      encodeCursor({ k: 1, id: 'dc_a' }),
      `${encodeCursor({ k: 1, id: 'dc_a' })}.${randomBytes(16).toString('base64url')}`,
      // Another list's: another account's sources, this account's webhooks, another service's key.
      signedCursor({ k: 1, id: 'dc_a' }, { ...sources, list: 'sources:u_b' }),
      signedCursor({ k: 1, id: 'wh_a' }, { ...sources, list: 'webhooks:u_a' }),
      signedCursor({ k: 1, id: 'dc_a' }, { ...sources, secretsKey: randomBytes(32) }),
      // Another position under this one's MAC.
      `${encodeCursor({ k: 2, id: 'dc_a' })}.${c.split('.')[1]}`,
    ]) {
      expect(() => keysetClause({ limit: 10, after: forged }, 'k', 'id', sources)).toThrow(/after is not a valid cursor/);
    }
  });

  it('round-trips cursors and pages newest first in both directions', () => {
    expect(decodeCursor(encodeCursor({ k: 42, id: 'x' }))).toEqual({ k: 42, id: 'x' });
    const rows = [3, 2, 1].map((k) => ({ k, id: `r${k}` }));
    const page = finishPage(rows, { limit: 3 }, 'desc', 5, (r) => r, (r) => r.id);
    expect(page.data).toEqual(['r3', 'r2', 'r1']);
    expect(page.page_info).toEqual({ total_count: 5, count: 3, start_cursor: encodeCursor(rows[0]), end_cursor: encodeCursor(rows[2]) });
    // A `before` page is fetched ascending and returned newest first.
    const before = finishPage([...rows].reverse(), { limit: 3 }, 'asc', 5, (r) => r, (r) => r.id);
    expect(before.data).toEqual(['r3', 'r2', 'r1']);
    expect(keysetClause({ limit: 3, after: signedCursor({ k: 2, id: 'r2' }, sources) }, 'k', 'id', sources)).toEqual({ where: '(k, id) < (?, ?)', params: [2, 'r2'], order: 'desc' });
  });

  it('gives string cursors on an empty page too (empty strings, which are no cursor when sent back)', () => {
    expect(finishPage([], { limit: 10 }, 'desc', 0, (r: { k: number; id: string }) => r, (r) => r).page_info).toEqual({ total_count: 0, count: 0, start_cursor: '', end_cursor: '' });
    expect(parsePageQuery({ after: '', before: '' })).toEqual({ limit: 10, after: undefined, before: undefined });
  });
});

describe('request input', () => {
  it('merges query and body, the body winning', () => {
    expect(mergeInput({ a: '1', b: 'q' }, { b: 2 })).toEqual({ a: '1', b: 2 });
    expect(mergeInput({ org_id: 'o_1' }, undefined)).toEqual({ org_id: 'o_1' });
  });
});
