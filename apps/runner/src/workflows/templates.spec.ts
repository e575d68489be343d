import { parsePath, resolveTemplates, TemplateError } from './templates';

const scope = {
  steps: { trigger: { event: { body: { items: [{ id: 7 }], 'odd key': 'x' } } }, normalize: { $return_value: { summary: 'order 1', n: 3 }, total: 10 } },
  secrets: { TOKEN: 's3cret' },
};

describe('workflow templates', () => {
  it('keeps the type of a whole template and interpolates inside text', () => {
    expect(resolveTemplates('{{steps.normalize.$return_value}}', scope)).toEqual({ summary: 'order 1', n: 3 });
    expect(resolveTemplates('{{ steps.normalize.total }}', scope)).toBe(10);
    expect(resolveTemplates('total {{steps.normalize.total}} of {{steps.normalize.$return_value}}', scope)).toBe('total 10 of {"summary":"order 1","n":3}');
    expect(resolveTemplates({ a: ['{{steps.trigger.event.body.items[0].id}}'], b: '{{trigger.event.body["odd key"]}}' }, scope)).toEqual({ a: [7], b: 'x' });
    expect(resolveTemplates('Bearer {{secrets.TOKEN}}', scope)).toBe('Bearer s3cret');
    expect(resolveTemplates('{{steps.missing.value}}', scope)).toBeUndefined();
    expect(resolveTemplates('x {{steps.missing.value}} y', scope)).toBe('x  y');
  });

  it('reads property paths only, and only own properties', () => {
    expect(() => resolveTemplates('{{process.env.HOME}}', scope)).toThrow(TemplateError);
    expect(() => resolveTemplates('{{steps.normalize.total + 1}}', scope)).toThrow(TemplateError);
    expect(() => resolveTemplates('{{secrets.NOPE}}', scope)).toThrow('secret NOPE is not set on this workflow');
    expect(resolveTemplates('{{steps.normalize.constructor}}', scope)).toBeUndefined();
    expect(parsePath('a.b[2]["c d"]')).toEqual(['a', 'b', '2', 'c d']);
  });

  it('reads own secrets only, and never resolves templates inside the values it inserts', () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) expect(() => resolveTemplates(`{{secrets.${name}}}`, scope)).toThrow(`secret ${name} is not set on this workflow`);
    // A caller of an HTTP trigger controls the event: a template in it stays text.
    const hostile = { ...scope, steps: { trigger: { event: { body: { note: '{{secrets.TOKEN}}' } } } } };
    expect(resolveTemplates('note: {{steps.trigger.event.body.note}}', hostile)).toBe('note: {{secrets.TOKEN}}');
    expect(resolveTemplates('{{steps.trigger.event.body.note}}', hostile)).toBe('{{secrets.TOKEN}}');
  });
});
