import { BadRequestError } from '@app/contracts';
import { analyzeComponent } from './analyze-component';
import type { ComponentDescriptor, PropDescriptor } from './descriptor';

function desc(over: Partial<ComponentDescriptor> = {}): ComponentDescriptor {
  return { name: 'My Source', version: '0.0.1', props: [], methods: [], hooks: [], hasRun: true, dependencies: [], format: 'cjs', ...over };
}

function problem(d: ComponentDescriptor): string {
  try {
    analyzeComponent(d);
  } catch (e) {
    expect(e).toBeInstanceOf(BadRequestError);
    expect((e as BadRequestError).status).toBe(400);
    return (e as Error).message;
  }
  throw new Error('expected a validation error');
}

const prop = (p: Partial<PropDescriptor> & { name: string }): PropDescriptor => ({ type: 'string', ...p });

describe('analyzeComponent', () => {
  it('builds configurable_props and meta for a source', () => {
    const out = analyzeComponent(
      desc({
        key: 'my-source',
        dedupe: 'unique',
        hooks: ['deploy', 'activate'],
        methods: ['helper'],
        dependencies: ['lodash'],
        props: [
          { name: 'http', type: '$.interface.http', customResponse: true },
          { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 60 } },
          { name: 'db', type: '$.service.db' },
          { name: 'token', type: 'string', secret: true, label: 'Token', description: 'API token' },
          { name: 'count', type: 'integer', min: 1, max: 10, optional: true, default: 5 },
          { name: 'color', type: 'string', options: ['red', { label: 'Blue', value: 'blue' }] },
          { name: 'remote', type: 'string', options: { $fn: true, async: true } },
          { name: 'note', type: 'alert', extra: { alertType: 'info', content: 'Hello' } },
          { name: 'tags', type: 'string[]', optional: true },
        ],
      }),
    );
    expect(out.name).toBe('My Source');
    expect(out.type).toBe('source');
    expect(out.configurableProps).toEqual([
      { name: 'http', type: '$.interface.http', customResponse: true },
      { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 60 } },
      { name: 'db', type: '$.service.db' },
      { name: 'token', type: 'string', label: 'Token', description: 'API token', secret: true },
      { name: 'count', type: 'integer', optional: true, default: 5, min: 1, max: 10 },
      { name: 'color', type: 'string', options: ['red', { label: 'Blue', value: 'blue' }] },
      { name: 'remote', type: 'string', remoteOptions: true },
      { name: 'note', type: 'alert', alertType: 'info', content: 'Hello', optional: true },
      { name: 'tags', type: 'string[]', optional: true },
    ]);
    expect(out.meta).toMatchObject({
      type: 'source',
      key: 'my-source',
      dedupe: 'unique',
      hooks: ['deploy', 'activate'],
      methods: ['helper'],
      dependencies: ['lodash'],
      httpProps: [{ prop: 'http', customResponse: true }],
      timerProps: ['timer'],
      dbProps: ['db'],
      secretProps: ['token'],
      customResponse: true,
    });
  });

  it('accepts a cron timer default and json, sql, http_request, object, any, integer[] and boolean[] props', () => {
    const out = analyzeComponent(
      desc({
        props: [
          { name: 'timer', type: '$.interface.timer', default: { cron: '0 * * * *' } },
          ...['json', 'sql', 'http_request', 'object', 'any', 'integer[]', 'boolean[]'].map((type, i) => prop({ name: `p${i}`, type })),
        ],
      }),
    );
    expect(out.configurableProps.map((p) => p.type)).toEqual(['$.interface.timer', 'json', 'sql', 'http_request', 'object', 'any', 'integer[]', 'boolean[]']);
  });

  it('resolves propDefinition against the app prop; the instance overrides inherited fields', () => {
    const out = analyzeComponent(
      desc({
        props: [
          {
            name: 'github',
            type: 'app',
            app: 'github',
            methods: ['_client'],
            propDefinitions: {
              repo: { type: 'string', label: 'Repository', description: 'owner/name', options: { $fn: true, async: true } },
              limit: { type: 'integer', label: 'Limit', min: 1, max: 100, optional: true, default: 10 },
            },
          },
          { name: 'repo', type: '', propDefinition: ['github', 'repo', { org: 'x' }] },
          { name: 'max', type: '', label: 'Max items', propDefinition: ['github', 'limit', { $fn: true, async: false }] },
        ],
      }),
    );
    expect(out.configurableProps).toEqual([
      { name: 'github', type: 'app', app: 'github' },
      { name: 'repo', type: 'string', label: 'Repository', description: 'owner/name', remoteOptions: true },
      { name: 'max', type: 'integer', label: 'Max items', optional: true, default: 10, min: 1, max: 100 },
    ]);
    expect(out.meta.apps).toEqual([{ prop: 'github', app: 'github', methods: ['_client'] }]);
    expect(out.meta.propDefinitions).toEqual({ repo: ['github', 'repo'], max: ['github', 'limit'] });
  });

  it('resolves a propDefinition that names the app by slug', () => {
    const out = analyzeComponent(desc({ props: [{ name: 'app', type: 'app', app: 'rss', propDefinitions: { url: { type: 'string' } } }, { name: 'url', type: '', propDefinition: ['rss', 'url', {}] }] }));
    expect(out.configurableProps[1]).toEqual({ name: 'url', type: 'string' });
  });

  it('accepts app hooks ($.interface.apphook) on an app prop, with static or method eventNames, and a default on a required prop', () => {
    const out = analyzeComponent(
      desc({
        props: [
          { name: 'slack', type: 'app', app: 'slack', methods: [] },
          { name: 'slackApphook', type: '$.interface.apphook', extra: { appProp: 'slack', eventNames: { $fn: true, async: true } } },
          { name: 'ghHook', type: '$.interface.apphook', extra: { appProp: 'slack', eventNames: ['push'] } },
          { name: 'ignoreBot', type: 'boolean', label: 'Ignore bots', default: false },
        ],
      }),
    );
    expect(out.configurableProps).toEqual([
      { name: 'slack', type: 'app', app: 'slack' },
      { name: 'slackApphook', type: '$.interface.apphook', appProp: 'slack', remoteEventNames: true },
      { name: 'ghHook', type: '$.interface.apphook', appProp: 'slack', eventNames: ['push'] },
      { name: 'ignoreBot', type: 'boolean', label: 'Ignore bots', default: false },
    ]);
    expect(out.meta.appHooks).toEqual([
      { prop: 'slackApphook', appProp: 'slack', app: 'slack', eventNames: null },
      { prop: 'ghHook', appProp: 'slack', app: 'slack', eventNames: ['push'] },
    ]);
  });

  it('accepts dir props (File Stash) as props that take no value', () => {
    const out = analyzeComponent(desc({ props: [{ name: 'dir', type: 'dir', optional: true, extra: { accessMode: 'write' } }] }));
    expect(out.configurableProps).toEqual([{ name: 'dir', type: 'dir', optional: true, accessMode: 'write' }]);
  });

  it('accepts a source without run that has a timer or HTTP interface (it emits each triggering event)', () => {
    const schedule = analyzeComponent(desc({ hasRun: false, props: [{ name: 'cron', type: '$.interface.timer', default: { cron: '0 11 * * *' } }] }));
    expect(schedule.type).toBe('source');
    const viaApp = analyzeComponent(desc({ hasRun: false, props: [{ name: 'schedule', type: 'app', app: 'schedule', propDefinitions: { cron: { type: '$.interface.timer' } } }, { name: 'cron', type: '', propDefinition: ['schedule', 'cron', {}] }] }));
    expect(viaApp.meta.timerProps).toEqual(['cron']);
    expect(analyzeComponent(desc({ hasRun: false, props: [{ name: 'http', type: '$.interface.http' }] })).type).toBe('source');
    expect(() => analyzeComponent(desc({ hasRun: false, props: [{ name: 'db', type: '$.service.db' }] }))).toThrow(/no run method/);
  });

  it('accepts app-specific prop types ($.airtable.baseId) when the component has an app prop of that app', () => {
    const out = analyzeComponent(
      desc({
        props: [
          { name: 'airtable', type: 'app', app: 'airtable_oauth' },
          { name: 'baseId', type: '$.airtable.baseId', extra: { appProp: 'airtable' } },
          { name: 'fields', type: '$.airtable_oauth.fieldId[]', optional: true },
        ],
      }),
    );
    expect(out.configurableProps.slice(1)).toEqual([
      { name: 'baseId', type: '$.airtable.baseId', appProp: 'airtable' },
      { name: 'fields', type: '$.airtable_oauth.fieldId[]', optional: true },
    ]);
    expect(problem(desc({ props: [{ name: 'baseId', type: '$.airtable.baseId' }] }))).toMatch(/prop "baseId" has type "\$\.airtable\.baseId", which needs an app prop of app "airtable"/);
    expect(problem(desc({ props: [{ name: 'x', type: '$.interface.webhook' }] }))).toMatch(/prop "x" has unknown type "\$\.interface\.webhook"/);
  });

  it('accepts a propDefinition of an app that is not a prop, as the sandbox resolved it', () => {
    const out = analyzeComponent(desc({ props: [{ name: 'url', type: 'string', label: 'Feed URL', propDefinition: ['rss', 'url', {}] }] }));
    expect(out.configurableProps).toEqual([{ name: 'url', type: 'string', label: 'Feed URL' }]);
  });

  it('shows customResponse only when the HTTP prop declares it', () => {
    const out = analyzeComponent(desc({ props: [{ name: 'a', type: '$.interface.http' }, { name: 'b', type: '$.interface.http', customResponse: false }] }));
    expect(out.configurableProps).toEqual([
      { name: 'a', type: '$.interface.http' },
      { name: 'b', type: '$.interface.http', customResponse: false },
    ]);
  });

  it('treats a component without a type as a source and reads an action', () => {
    expect(analyzeComponent(desc()).type).toBe('source');
    const action = analyzeComponent(desc({ type: 'action', props: [{ name: 'db', type: '$.service.db' }, { name: 'app', type: 'app', app: 'slack' }] }));
    expect(action.type).toBe('action');
  });

  it.each([
    [{ name: undefined }, /no name/],
    [{ name: '  ' }, /no name/],
    [{ version: undefined }, /no version/],
    [{ version: 3 }, /version must be a non-empty string such as "0.0.1", got 3/],
    [{ version: '' }, /version must be a non-empty string/],
    [{ name: 'n'.repeat(256) }, /name must be at most 255 characters, got 256/],
    [{ version: '1'.repeat(256) }, /version must be at most 255 characters/],
    [{ key: 'k'.repeat(256) }, /key must be at most 255 characters/],
    [{ hasRun: false }, /no run method/],
    [{ type: 'action', hasRun: false }, /no run method/],
    [{ type: 'workflow' }, /type must be "source" or "action"/],
    [{ dedupe: 'newest' }, /unknown dedupe strategy "newest"/],
    [{ type: 'action', dedupe: 'unique' }, /dedupe is for sources only/],
    [{ type: 'action', hooks: ['deploy'] }, /hooks are for sources only/],
    [{ hooks: ['destroy'] }, /unknown hook destroy/],
    [{ type: 'action', props: [{ name: 'http', type: '$.interface.http' }] }, /prop "http": \$\.interface\.http is for sources only/],
    [{ type: 'action', props: [{ name: 'timer', type: '$.interface.timer' }] }, /prop "timer": \$\.interface\.timer is for sources only/],
    [{ props: [{ name: 'x', type: 'date' }] }, /prop "x" has unknown type "date"/],
    [{ props: [{ name: 'x', type: '' }] }, /prop "x" has no type/],
    [{ props: [{ name: 'hook', type: '$.interface.apphook' }] }, /prop "hook": an app hook needs appProp/],
    [{ props: [{ name: 'hook', type: '$.interface.apphook', extra: { appProp: 'slack' } }] }, /prop "hook": appProp "slack" is not an app prop/],
    [{ props: [{ name: 'slack', type: 'app', app: 'slack' }, { name: 'hook', type: '$.interface.apphook', extra: { appProp: 'slack', eventNames: [1] } }] }, /prop "hook": eventNames must be an array of strings/],
    [{ type: 'action', props: [{ name: 'slack', type: 'app', app: 'slack' }, { name: 'hook', type: '$.interface.apphook', extra: { appProp: 'slack', eventNames: ['x'] } }] }, /\$\.interface\.apphook is for sources only/],
    [{ props: [{ name: 'x', type: 'string', min: 1 }] }, /prop "x": min is allowed on integer props only/],
    [{ props: [{ name: 'x', type: 'boolean', max: 1 }] }, /prop "x": max is allowed on integer props only/],
    [{ props: [{ name: 'x', type: 'integer', min: 1.5 }] }, /prop "x": min must be an integer/],
    [{ props: [{ name: 'x', type: 'integer', min: 5, max: 1 }] }, /prop "x": min is greater than max/],
    [{ props: [{ name: 'x', type: 'integer', secret: true }] }, /prop "x": secret is allowed on string props only/],
    [{ props: [{ name: 't', type: '$.interface.timer', default: { intervalSeconds: 0 } }] }, /prop "t": a timer default must be/],
    [{ props: [{ name: 't', type: '$.interface.timer', extra: { static: { every: 5 } } }] }, /prop "t": a timer static must be/],
    [{ props: [{ name: 't', type: '$.interface.timer', default: { cron: 'bogus cron' } }] }, /prop "t": a timer default must be a timer value: cron must have 5 fields/],
    [{ props: [{ name: 't', type: '$.interface.timer', default: { cron: '0 * * * *', timezone: 'Mars/Olympus' } }] }, /prop "t": a timer default must be a timer value: unknown timezone "Mars\/Olympus"/],
    [{ props: [{ name: 'a', type: 'app' }] }, /prop "a": an app prop needs an "app" slug/],
    [{ props: [{ name: 'x', type: 'string', options: [{ nope: 1 }] }] }, /prop "x": each option must be/],
    [{ props: [{ name: 'x', type: 'string' }, { name: 'x', type: 'string' }] }, /prop "x" is declared twice/],
    [{ props: [{ name: 'r', type: '', propDefinition: ['gh', 'repo', {}] }] }, /prop "r": propDefinition refers to app "gh"/],
    [{ props: [{ name: 'gh', type: 'app', app: 'github', propDefinitions: {} }, { name: 'r', type: '', propDefinition: ['gh', 'repo', {}] }] }, /prop "r": app "github" has no propDefinition "repo"/],
  ] as [Partial<ComponentDescriptor>, RegExp][])('refuses %j', (over, message) => {
    expect(problem(desc(over))).toMatch(message);
  });
});
