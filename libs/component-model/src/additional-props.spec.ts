import { ApiError } from '@app/contracts';
import { analyzeAdditionalProps } from './additional-props';
import { ADDITIONAL_PROPS_MAX_BYTES, ADDITIONAL_PROPS_MAX_COUNT } from './form-limits';
import type { ConfigurableProp } from './analyze-component';

const staticProps: ConfigurableProp[] = [
  { name: 'github', type: 'app', app: 'github' },
  { name: 'kind', type: 'string', options: ['issues', 'pulls'], reloadProps: true },
];

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect((e as ApiError).status).toBe(400);
    return (e as ApiError).message;
  }
  throw new Error('expected an error');
}

describe('analyzeAdditionalProps', () => {
  it('turns the returned props into configurable_props like static ones', () => {
    expect(
      analyzeAdditionalProps(staticProps, [
        { name: 'label', type: 'string', label: 'Label', options: ['bug', { label: 'Feature', value: 'feature' }], optional: true, default: 'bug' },
        { name: 'minComments', type: 'integer', min: 0, max: 100 },
        { name: 'token', type: 'string', secret: true },
        { name: 'openai', type: 'app', app: 'openai' },
        { name: 'repo', type: 'string', propDefinition: ['github', 'repoFullname', {}], options: { $fn: true, async: true } },
        { name: 'note', type: 'alert', extra: { alertType: 'info', content: 'Pick a label' } },
      ]),
    ).toEqual([
      { name: 'label', type: 'string', label: 'Label', options: ['bug', { label: 'Feature', value: 'feature' }], optional: true, default: 'bug' },
      { name: 'minComments', type: 'integer', min: 0, max: 100 },
      { name: 'token', type: 'string', secret: true },
      { name: 'openai', type: 'app', app: 'openai' },
      { name: 'repo', type: 'string', remoteOptions: true },
      { name: 'note', type: 'alert', optional: true, alertType: 'info', content: 'Pick a label' },
    ]);
  });

  it('refuses what a static prop could not be, naming additionalProps()', () => {
    expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'x', type: 'strin' }]))).toMatch(/^additionalProps\(\): prop "x" has unknown type "strin"/);
    expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'x', type: 'string', min: 1 }]))).toMatch(/min is allowed on integer props only/);
    expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'x', type: 'string' }, { name: 'x', type: 'integer' }]))).toMatch(/prop "x" is returned twice/);
    expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'hook', type: '$.interface.http' }]))).toMatch(/\$\.interface\.http cannot be added by additionalProps\(\)/);
  });

  it('refuses services, names every object has, NUL characters and oversized answers', () => {
    for (const type of ['$.service.db', 'dir', '$.interface.apphook']) {
      expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'x', type }]))).toBe(`additionalProps(): prop "x": ${type} cannot be added by additionalProps(), only declared in props`);
    }
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(message(() => analyzeAdditionalProps(staticProps, [{ name, type: 'string' }]))).toBe(`additionalProps(): prop "${name}": every JavaScript object has a member named "${name}"; choose another name`);
    }
    expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'x', type: 'string', label: 'a\u0000' }]))).toMatch(/NUL character/);
    const many = Array.from({ length: ADDITIONAL_PROPS_MAX_COUNT + 1 }, (_, i) => ({ name: `p${i}`, type: 'string' }));
    expect(message(() => analyzeAdditionalProps(staticProps, many))).toBe('additionalProps() failed: it returned 201 props; at most 200 may be added');
    expect(message(() => analyzeAdditionalProps(staticProps, [{ name: 'x', type: 'string', description: 'x'.repeat(ADDITIONAL_PROPS_MAX_BYTES) }]))).toMatch(/at most 262144 may be added$/);
    expect(analyzeAdditionalProps(staticProps, many.slice(0, ADDITIONAL_PROPS_MAX_COUNT))).toHaveLength(ADDITIONAL_PROPS_MAX_COUNT);
  });

  it('adds one schedule to a component that declares none, checked like a static timer', () => {
    const timer = { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 300 } };
    expect(analyzeAdditionalProps(staticProps, [timer])).toEqual([timer]);
    const twice = [timer, { ...timer, name: 'other' }];
    const one = 'a source has one schedule; additionalProps() may add a $.interface.timer only to a component that declares none, and only one';
    expect(message(() => analyzeAdditionalProps(staticProps, twice))).toBe(`additionalProps(): prop "other": ${one}`);
    const declared: ConfigurableProp[] = [...staticProps, { name: 'poll', type: '$.interface.timer' }];
    expect(message(() => analyzeAdditionalProps(declared, [timer]))).toBe(`additionalProps(): prop "timer": ${one}`);
    expect(message(() => analyzeAdditionalProps(staticProps, [{ ...timer, default: { intervalSeconds: -5 } }]))).toMatch(/^additionalProps\(\): .*timer/);
  });
});
