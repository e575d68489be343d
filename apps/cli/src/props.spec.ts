import { coerceToDescriptors, completeProps, needsValue, parsePropFlags, PropDescriptor } from './props';

const DESCRIPTORS: PropDescriptor[] = [
  { name: 'http', type: '$.interface.http' },
  { name: 'db', type: '$.service.db' },
  { name: 'github', type: 'app' },
  { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 60 } },
  { name: 'renewal', type: '$.interface.timer', static: { intervalSeconds: 82080 } },
  { name: 'name', type: 'string' },
  { name: 'count', type: 'integer' },
  { name: 'tags', type: 'string[]' },
  { name: 'note', type: 'string', optional: true },
];

describe('pd props', () => {
  it('parses --prop values as JSON when they parse, keeping the raw text', () => {
    const { values, raw } = parsePropFlags(['count=5', 'name=123', 'obj={"a":1}', 'text=hello world', 'eq=a=b']);
    expect(values).toEqual({ count: 5, name: 123, obj: { a: 1 }, text: 'hello world', eq: 'a=b' });
    expect(raw.name).toBe('123');
    expect(() => parsePropFlags(['novalue'])).toThrow(/--prop expects name=value/);
  });

  it('keeps string props as text and splits comma lists for array props', () => {
    const { values, raw } = parsePropFlags(['name=123', 'count=7', 'tags=a, b,c']);
    expect(coerceToDescriptors(values, DESCRIPTORS, raw)).toEqual({ name: '123', count: 7, tags: ['a', 'b', 'c'] });
  });

  it('needs values only for required props the platform does not fill', () => {
    expect(DESCRIPTORS.filter((d) => needsValue(d, {})).map((d) => d.name)).toEqual(['name', 'count', 'tags']);
  });

  it('without a terminal, names every missing required prop', async () => {
    await expect(completeProps(DESCRIPTORS, { name: 'x' }, false)).rejects.toThrow('missing required props: count (integer), tags (string[]); pass --prop name=value or --props file.json');
    await expect(completeProps(DESCRIPTORS, { name: 'x', count: 1, tags: [] }, false)).resolves.toEqual({ name: 'x', count: 1, tags: [] });
  });
});
