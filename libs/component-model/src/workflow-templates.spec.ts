import { stepTemplateProblem } from './workflow-templates';

describe('stepTemplateProblem', () => {
  const plain = () => false;
  it.each([
    [{ t: '{{ foo }}' }, [], 'steps[1].props.t', '"{{foo}}": a template starts with steps., trigger. or secrets.'],
    [{ t: 'hi {{ foo.bar }}' }, [], 'steps[1].props.t', '"{{foo.bar}}": a template starts with steps., trigger. or secrets.'],
    [{ t: '{{ a + b }}' }, [], 'steps[1].props.t', 'cannot read "{{a + b}}": only property paths like steps.name.$return_value.field are allowed'],
    [{ t: { deep: ['{{steps.nosuch.y}}'] } }, ['a'], 'steps[1].props.t.deep[0]', '"{{steps.nosuch.y}}": no step "nosuch" runs before this one (a step reads steps.trigger and the steps before it: a)'],
    [{ t: '{{secrets.A.B}}' }, [], 'steps[1].props.t', '"{{secrets.A.B}}": use {{secrets.NAME}} (a secret name is letters, digits and _)'],
    [{ t: '{{secrets.A-B}}' }, [], 'steps[1].props.t', '"{{secrets.A-B}}": use {{secrets.NAME}} (a secret name is letters, digits and _)'],
    [{ t: '{{steps}}' }, [], 'steps[1].props.t', '"{{steps}}": name a step ({{steps.<step>.$return_value}}, {{steps.trigger.event}})'],
  ])('%j after %j → %s', (values, earlier, path, problem) => {
    expect(stepTemplateProblem(values, 1, earlier, plain)).toEqual({ path, problem });
  });

  it('accepts templates that can resolve', () => {
    const values = { a: '{{steps.trigger.event.body}}', b: 'x {{ trigger.event.n }} {{steps.first.$return_value.y[0]}}', c: '{{secrets.S}}', d: 'no {template}' };
    expect(stepTemplateProblem(values, 1, ['first'], plain)).toBeUndefined();
  });

  it('quotes nothing of a hidden value, the step it names included', () => {
    const hides = (name: string) => name === 'key';
    expect(stepTemplateProblem({ note: 'n', key: 'x{{steps.sekret.y}}' }, 0, [], hides)).toEqual({ path: 'steps[0].props.key', problem: '"{{********}}": no step "********" runs before this one (a step reads steps.trigger and the steps before it)' });
    expect(stepTemplateProblem({ key: '{{ sek ret }}' }, 0, [], hides)).toEqual({ path: 'steps[0].props.key', problem: 'cannot read "{{********}}": only property paths like steps.name.$return_value.field are allowed' });
  });
});
