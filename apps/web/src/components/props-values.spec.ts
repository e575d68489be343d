import { initialRaw, MASK, toConfigured } from './props-values';
import { tokenize } from '../highlight';
import type { ConfigurableProp } from '../types';

const props: ConfigurableProp[] = [
  { name: 'http', type: '$.interface.http' },
  { name: 'greeting', type: 'string', optional: true, default: 'hi' },
  { name: 'token', type: 'string', secret: true },
  { name: 'count', type: 'integer', min: 1, max: 5, optional: true },
  { name: 'flag', type: 'boolean', optional: true },
  { name: 'tags', type: 'string[]', optional: true },
  { name: 'level', type: 'string', options: ['low', { label: 'High', value: 'high' }] },
  { name: 'extra', type: 'object', optional: true },
  { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 60 } },
  { name: 'slack', type: 'app', app: 'slack' },
];

describe('dashboard props form values', () => {
  it('starts from defaults and turns the form into configured_props', () => {
    const raw = Object.fromEntries(props.map((p) => [p.name, initialRaw(p)]));
    expect(raw).toMatchObject({ greeting: 'hi', count: '', flag: false, tags: '', level: '', timer: { mode: 'interval', interval: '60', cron: '' } });
    Object.assign(raw, { token: 's3cret', count: '3', flag: true, tags: 'a\n b \n', level: '"high"', extra: '{"x":1}', slack: '{"token":"xoxb"}' });
    raw.timer = { mode: 'cron', interval: '60', cron: '*/5 * * * *', timezone: 'Europe/Paris' };
    expect(toConfigured(props, raw)).toEqual({
      value: { greeting: 'hi', token: 's3cret', count: 3, flag: true, tags: ['a', 'b'], level: 'high', extra: { x: 1 }, timer: { cron: '*/5 * * * *', timezone: 'Europe/Paris' }, slack: { $auth: { token: 'xoxb' } } },
      errors: {},
    });
  });

  it("sends no value for a timer with its own (static) schedule", () => {
    const withStatic: ConfigurableProp[] = [...props, { name: 'renewal', type: '$.interface.timer', static: { intervalSeconds: 82080 } }];
    const raw = Object.fromEntries(withStatic.map((p) => [p.name, initialRaw(p)]));
    Object.assign(raw, { token: 't', level: '"low"' });
    expect(toConfigured(withStatic, raw).value).not.toHaveProperty('renewal');
  });

  it('names the fields the browser already knows are wrong', () => {
    const raw = Object.fromEntries(props.map((p) => [p.name, initialRaw(p)]));
    Object.assign(raw, { count: '2.5', extra: '{not json', level: '"low"' });
    expect(toConfigured(props, raw).errors).toEqual({ token: 'required', count: 'expected a whole number', extra: 'not valid JSON' });
  });

  it('edits keep stored secrets masked and read a timer as the API shows it', () => {
    const stored = { token: MASK, timer: { cron: null, interval_seconds: 30 }, slack: { $auth: MASK } };
    const raw = Object.fromEntries(props.map((p) => [p.name, initialRaw(p, (stored as Record<string, unknown>)[p.name])]));
    expect(raw).toMatchObject({ token: MASK, timer: { mode: 'interval', interval: '30' }, slack: MASK });
    const { value } = toConfigured(props, { ...raw, level: '"low"' });
    expect(value).toMatchObject({ token: MASK, timer: { intervalSeconds: 30 }, slack: { $auth: MASK } });
  });
});

describe('dashboard code highlighting', () => {
  it('colours comments, strings, numbers, keywords and property names, and keeps every character', () => {
    const code = 'const a = { key: "v", n: 42 }; // note\nreturn `t${a}`;';
    const tokens = tokenize(code);
    expect(tokens.map((t) => t.text).join('')).toBe(code);
    const kinds = Object.fromEntries(tokens.filter((t) => t.kind).map((t) => [t.text, t.kind]));
    expect(kinds).toEqual({ const: 'keyword', key: 'property', '"v"': 'string', n: 'property', '42': 'number', '// note': 'comment', return: 'keyword', '`t${a}`': 'string' });
  });
});
