import { arr, data, nullable, num, obj, opt, readShape, str } from './answer-shape';

const SHAPE = data(obj({ id: str, count: opt(num), cursor: nullable(str), items: arr(obj({ name: str }), 2) }));
const problem = (answer: unknown): string | undefined => {
  try {
    readShape(answer, SHAPE);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
};

describe('readShape', () => {
  it('returns the answer as sent, undeclared fields included, when its declared fields have their types', () => {
    const answer = { data: { id: 'x', cursor: null, items: [{ name: 'a', extra: [1] }], more: true } };
    expect(readShape(answer, SHAPE)).toBe(answer);
  });

  it('names the first field that is wrong, by its path from the top', () => {
    expect(problem({ data: 5 })).toBe('data is not a JSON object');
    expect(problem([])).toBe('the answer is not a JSON object');
    expect(problem({ data: { id: {}, cursor: null, items: [] } })).toBe('data.id is not a string');
    expect(problem({ data: { id: 'x', count: '3', cursor: null, items: [] } })).toBe('data.count is not a number');
    expect(problem({ data: { id: 'x', cursor: 1, items: [] } })).toBe('data.cursor is not a string');
    expect(problem({ data: { id: 'x', cursor: null, items: [{ name: 'a' }, { name: 1 }] } })).toBe('data.items[1].name is not a string');
    expect(problem({ data: { id: 'x', cursor: null, items: [{}, {}, {}] } })).toBe('data.items has 3 items, more than the 2 asked for');
  });

  it('refuses nesting deeper than 1000 levels without overflowing the stack itself', () => {
    const deep = JSON.parse(`{"data":{"id":"x","cursor":null,"items":[],"e":${'['.repeat(200_000)}${']'.repeat(200_000)}}}`) as unknown;
    expect(problem(deep)).toBe('data.e[0] is nested deeper than 1000 levels');
  });
});
