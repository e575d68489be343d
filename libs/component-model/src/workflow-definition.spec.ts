import { readWorkflowDefinition, secretNamesOf, WorkflowDefinitionError } from './workflow-definition';

const ok = { name: 'flow', trigger: { http: {} }, steps: [{ name: 'a', code: 'export default {}' }] };

function errorOf(input: unknown): { path: string; message: string } {
  try {
    readWorkflowDefinition(input);
  } catch (e) {
    if (e instanceof WorkflowDefinitionError) return { path: e.path, message: e.message };
    throw e;
  }
  throw new Error('no error');
}

describe('readWorkflowDefinition', () => {
  it('normalizes a valid definition', () => {
    expect(readWorkflowDefinition({ ...ok, name: ' flow ', settings: { concurrency: 1, throttle: { limit: 2, period_seconds: 60 }, timeout_seconds: 30 } })).toEqual({
      name: 'flow',
      trigger: { http: { customResponse: false } },
      steps: [{ name: 'a', code: 'export default {}', props: {} }],
      settings: { concurrency: 1, throttle: { limit: 2, period_seconds: 60 }, timeout_seconds: 30 },
    });
    expect(readWorkflowDefinition({ ...ok, trigger: { timer: { cron: '0 * * * *', timezone: 'Europe/Paris' } } }).trigger).toEqual({ timer: { cron: '0 * * * *', timezone: 'Europe/Paris' } });
    expect(readWorkflowDefinition({ ...ok, trigger: { events: { emitter_id: 'p_*', event_name: '$errors' } } }).trigger).toEqual({ events: { emitter_id: 'p_*', event_name: '$errors' } });
    expect(readWorkflowDefinition({ ...ok, trigger: { source: { key: 'http-source', props: { a: 1 } } } }).trigger).toEqual({ source: { key: 'http-source', props: { a: 1 } } });
  });

  it.each([
    [{ ...ok, name: '' }, 'name'],
    [{ ...ok, extra: 1 }, 'extra'],
    [{ ...ok, trigger: { http: {}, timer: {} } }, 'trigger'],
    [{ ...ok, trigger: { webhook: {} } }, 'trigger.webhook'],
    [{ ...ok, trigger: { http: { customResponse: 'yes' } } }, 'trigger.http.customResponse'],
    [{ ...ok, trigger: { timer: { intervalSeconds: 0 } } }, 'trigger.timer.intervalSeconds'],
    [{ ...ok, trigger: { timer: { cron: '* * * * *', timezone: 'Mars/Base' } } }, 'trigger.timer.timezone'],
    [{ ...ok, trigger: { timer: { cron: '* * * * * *' } } }, 'trigger.timer.cron'],
    [{ ...ok, trigger: { timer: { cron: '61 * * * *' } } }, 'trigger.timer.cron'],
    [{ ...ok, trigger: { source: 'src_1' } }, 'trigger.source'],
    [{ ...ok, trigger: { source: { code: 'x', key: 'y' } } }, 'trigger.source'],
    [{ ...ok, trigger: { events: { emitter_id: 'wh_1' } } }, 'trigger.events.emitter_id'],
    [{ ...ok, trigger: { events: { emitter_id: 'p_*', event_name: '$foo' } } }, 'trigger.events.event_name'],
    [{ ...ok, trigger: { events: { emitter_id: 'p_*', event_name: 'x'.repeat(256) } } }, 'trigger.events.event_name'],
    [{ ...ok, steps: [] }, 'steps'],
    [{ ...ok, steps: [{ name: '1a', code: 'x' }] }, 'steps[0].name'],
    [{ ...ok, steps: [{ name: 'trigger', code: 'x' }] }, 'steps[0].name'],
    [{ ...ok, steps: [{ name: '__proto__', code: 'x' }] }, 'steps[0].name'],
    [{ ...ok, steps: [{ name: 'a', code: 'x' }, { name: 'a', code: 'y' }] }, 'steps[1].name'],
    [{ ...ok, steps: [{ name: 'a', code: 'x', action: 'y' }] }, 'steps[0]'],
    [{ ...ok, steps: [{ name: 'a', action: 'y', props: [] }] }, 'steps[0].props'],
    [{ ...ok, trigger: { timer: { cron: '0 * * * *', intervalSeconds: 60 } } }, 'trigger.timer'],
    [{ ...ok, trigger: { timer: { intervalSeconds: 60, timezone: 'Europe/Paris' } } }, 'trigger.timer.timezone'],
    [{ ...ok, trigger: { manual: { x: 1 } } }, 'trigger.manual.x'],
    [{ ...ok, trigger: { manual: 'yes' } }, 'trigger.manual'],
    [{ ...ok, settings: { concurrency: 0 } }, 'settings.concurrency'],
    [{ ...ok, settings: { throttle: { limit: 1 } } }, 'settings.throttle.period_seconds'],
    [{ ...ok, settings: { retries: 3 } }, 'settings.retries'],
  ])('names the path of the bad field (%#)', (input, path) => {
    const e = errorOf(input);
    expect(e.path).toBe(path);
    expect(e.message.startsWith(`${path}: `)).toBe(true);
  });

  it('says a manual trigger takes no fields, rather than listing none as allowed', () => {
    expect(errorOf({ ...ok, trigger: { manual: { x: 1 } } }).message).toBe('trigger.manual.x: unknown field (trigger.manual takes no fields)');
  });

  it('keeps a manual trigger of {} or null, and the props as given', () => {
    expect(readWorkflowDefinition({ ...ok, trigger: { manual: {} } }).trigger).toEqual({ manual: {} });
    expect(readWorkflowDefinition({ ...ok, trigger: { manual: null } }).trigger).toEqual({ manual: {} });
    const props = { a: '{{steps.trigger.event.body}}', b: 'x {{ trigger.event.n }} {{steps.first.$return_value.y[0]}}', c: '{{secrets.S}}', d: 'no {template}' };
    const def = readWorkflowDefinition({ ...ok, steps: [{ name: 'first', code: 'x' }, { name: 'second', code: 'y', props }] });
    expect(def.steps[1].props).toEqual(props);
  });

  it('finds the secrets the props use', () => {
    const def = readWorkflowDefinition({ ...ok, steps: [{ name: 'a', action: 'x', props: { t: '{{secrets.B}}', n: { deep: ['{{ secrets.A }} and {{secrets.B}}'] } } }] });
    expect(secretNamesOf(def)).toEqual(['A', 'B']);
  });
});
