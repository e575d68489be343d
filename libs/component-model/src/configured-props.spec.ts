import { ApiError } from '@app/contracts';
import type { ConfigurableProp } from './analyze-component';
import { cronIntervalSeconds, cronProblem, validateConfiguredProps } from './configured-props';

const limits = { timerMinIntervalSeconds: 15, propsMaxBytes: 64 * 1024, propsDocumentMaxBytes: 512 * 1024 };
const check = (props: ConfigurableProp[], input: unknown) => validateConfiguredProps(props, input, limits);

function error(props: ConfigurableProp[], input: unknown, withLimits = limits): { status: number; message: string; details?: Record<string, unknown> } {
  try {
    validateConfiguredProps(props, input, withLimits);
  } catch (e) {
    const err = e as ApiError;
    return { status: err.status, message: err.message, details: err.details };
  }
  throw new Error('expected an error');
}

describe('validateConfiguredProps', () => {
  const all: ConfigurableProp[] = [
    { name: 'http', type: '$.interface.http' },
    { name: 'db', type: '$.service.db' },
    { name: 'note', type: 'alert', optional: true },
    { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 60 } },
    { name: 's', type: 'string' },
    { name: 'i', type: 'integer', min: 1, max: 10 },
    { name: 'b', type: 'boolean' },
    { name: 'o', type: 'object', optional: true },
    { name: 'a', type: 'any', optional: true },
    { name: 'j', type: 'json', optional: true },
    { name: 'q', type: 'sql', optional: true },
    { name: 'h', type: 'http_request', optional: true },
    { name: 'ss', type: 'string[]', optional: true, options: ['x', { label: 'Y', value: 'y' }] },
    { name: 'ii', type: 'integer[]', optional: true, min: 0 },
    { name: 'bb', type: 'boolean[]', optional: true },
    { name: 'opt', type: 'string', optional: true, default: 'dflt' },
    { name: 'app', type: 'app', app: 'github' },
  ];
  const base = { s: 'x', i: 5, b: true };

  it("never repeats a secret prop's value in an error, whatever is wrong with it", () => {
    const secret = (type: string, extra: Partial<ConfigurableProp> = {}): ConfigurableProp[] => [{ name: 'k', type, secret: true, ...extra }];
    const message = (props: ConfigurableProp[], v: unknown): string => {
      try {
        validateConfiguredProps(props, { k: v }, limits);
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    const cases: [ConfigurableProp[], unknown][] = [
      [secret('integer', { max: 10 }), 918273645],
      [secret('integer', { min: 1_000_000_000 }), 918273645],
      [secret('integer'), 'hunter2'],
      [secret('string'), 918273645],
      [secret('string', { options: ['a'] }), 'hunter2'],
      [secret('string[]'), 'hunter2'],
      [secret('object'), 'hunter2'],
    ];
    for (const [props, v] of cases) expect(message(props, v)).not.toContain(String(v));
  });

  it('accepts every type, applies defaults, and leaves out system props', () => {
    const out = check(all, { ...base, http: {}, o: { k: 1 }, a: [1], j: { z: null }, q: 'select 1', h: { url: 'https://x' }, ss: ['x', 'y'], ii: [0, 3], bb: [true, false], app: { $auth: { oauth_access_token: 't' } } });
    expect(out).toEqual({
      timer: { intervalSeconds: 60 },
      s: 'x',
      i: 5,
      b: true,
      o: { k: 1 },
      a: [1],
      j: { z: null },
      q: 'select 1',
      h: { url: 'https://x' },
      ss: ['x', 'y'],
      ii: [0, 3],
      bb: [true, false],
      opt: 'dflt',
      app: { $auth: { oauth_access_token: 't' } },
    });
  });

  it('defaults a missing app prop to an empty $auth and accepts snake_case interval_seconds', () => {
    expect(check(all, { ...base, timer: { interval_seconds: 20 } })).toMatchObject({ timer: { intervalSeconds: 20 }, app: { $auth: {} } });
  });

  it('takes null for the props that hold no value (http, db, alert) as no value', () => {
    expect(check(all, { ...base, http: null, db: null, note: null })).toEqual(check(all, base));
  });

  it("takes a static timer's own schedule whether or not a value is given (google_drive's push renewal, hidden on Pipedream)", () => {
    const props: ConfigurableProp[] = [{ name: 'timer', type: '$.interface.timer', static: { intervalSeconds: 82800 }, hidden: true }, { name: 's', type: 'string' }];
    expect(check(props, { s: 'x' })).toEqual({ s: 'x', timer: { intervalSeconds: 82800 } });
    expect(check(props, { s: 'x', timer: { intervalSeconds: 900 } }).timer).toEqual({ intervalSeconds: 82800 });
  });

  it('raises a static or default interval under TIMER_MIN_INTERVAL_SECONDS to the minimum instead of refusing the source', () => {
    for (const own of ['static', 'default'] as const) {
      const props: ConfigurableProp[] = [{ name: 't', type: '$.interface.timer', [own]: { intervalSeconds: 1 } }];
      expect(check(props, {}).t).toEqual({ intervalSeconds: 15 });
      expect(validateConfiguredProps(props, {}, { ...limits, timerMinIntervalSeconds: 3600 }).t).toEqual({ intervalSeconds: 3600 });
    }
    // At or over the minimum, and cron schedules, are kept as the component wrote them.
    expect(check([{ name: 't', type: '$.interface.timer', default: { intervalSeconds: 15 } }], {}).t).toEqual({ intervalSeconds: 15 });
    expect(check([{ name: 't', type: '$.interface.timer', default: { cron: '*/5 * * * *' } }], {}).t).toEqual({ cron: '*/5 * * * *' });
    // A value the client gives under the minimum is still refused.
    expect(error([{ name: 't', type: '$.interface.timer', default: { intervalSeconds: 60 } }], { t: { intervalSeconds: 1 } }).status).toBe(400);
  });

  it('accepts cron timers with a timezone', () => {
    expect(check(all, { ...base, timer: { cron: '0 9 * * 1-5', timezone: 'Europe/Paris' } }).timer).toEqual({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris' });
  });

  it.each([
    [{ s: 'x', i: 5 }, /configured_props\.b: is required/],
    [{ ...base, s: 1 }, /configured_props\.s: must be a string/],
    [{ ...base, i: 1.5 }, /configured_props\.i: must be an integer/],
    [{ ...base, i: '5' }, /configured_props\.i: must be an integer/],
    [{ ...base, i: 0 }, /configured_props\.i: must be at least 1/],
    [{ ...base, i: 11 }, /configured_props\.i: must be at most 10/],
    [{ ...base, b: 'yes' }, /configured_props\.b: must be a boolean/],
    [{ ...base, o: [1] }, /configured_props\.o: must be an object/],
    [{ ...base, h: 'x' }, /configured_props\.h: must be an object/],
    [{ ...base, q: 3 }, /configured_props\.q: must be a SQL string/],
    [{ ...base, ss: 'x' }, /configured_props\.ss: must be an array of strings/],
    [{ ...base, ss: ['z'] }, /configured_props\.ss\[0\]: "z" is not one of the options: "x", "y"/],
    [{ ...base, ii: [1, -1] }, /configured_props\.ii\[1\]: must be at least 0/],
    [{ ...base, bb: [1] }, /configured_props\.bb\[0\]: must be a boolean/],
    [{ ...base, note: 'x' }, /configured_props\.note: an alert prop takes no value/],
    [{ ...base, db: 3 }, /configured_props\.db: \$\.service\.db takes no value/],
    [{ ...base, timer: { intervalSeconds: 5 } }, /configured_props\.timer: intervalSeconds must be at least 15, got 5/],
    [{ ...base, timer: { intervalSeconds: 1e300 } }, /configured_props\.timer: intervalSeconds must be at most 31622400 \(366 days\), got 1e\+300/],
    [{ ...base, timer: { intervalSeconds: 31622401 } }, /intervalSeconds must be at most 31622400/],
    [{ ...base, timer: { intervalSeconds: '60' } }, /configured_props\.timer: a timer needs intervalSeconds/],
    [{ ...base, timer: 60 }, /configured_props\.timer: a timer takes/],
    [{ ...base, timer: { cron: '* * * *' } }, /configured_props\.timer: cron must have 5 fields/],
    [{ ...base, timer: { cron: '61 * * * *' } }, /configured_props\.timer: invalid cron/],
    [{ ...base, timer: { cron: '* * * * *', timezone: 'Mars/Base' } }, /configured_props\.timer: unknown timezone "Mars\/Base"/],
    [{ ...base, timer: { intervalSeconds: 60, timezone: 'UTC' } }, /configured_props\.timer: timezone applies to cron only/],
    [{ ...base, timer: { every: 5 } }, /configured_props\.timer: unknown timer field every/],
    [{ ...base, app: 'token' }, /configured_props\.app: an app prop takes/],
    [{ ...base, app: { token: 'x' } }, /configured_props\.app: an app prop takes only "\$auth"/],
    [{ ...base, app: { $auth: 'x' } }, /configured_props\.app: \$auth must be an object/],
    [{ ...base, nope: 1, other: 2 }, /unknown props nope, other/],
  ])('refuses %j', (input, message) => {
    const e = error(all, input);
    expect(e.status).toBe(400);
    expect(e.message).toMatch(message);
  });

  it('names the prop in details', () => {
    expect(error(all, { ...base, i: 0 }).details).toEqual({ prop: 'i' });
  });

  it('leaves values known only at run time (deferred) unchecked, whole or as array elements, and still refuses the rest', () => {
    const props: ConfigurableProp[] = [
      { name: 'n', type: 'integer' },
      { name: 'c', type: 'string', options: ['a', 'b'] },
      { name: 'list', type: 'integer[]' },
    ];
    const deferred = (v: unknown) => typeof v === 'string' && v.startsWith('{{');
    const input = { n: '{{steps.a.n}}', c: '{{trigger.event.c}}', list: [1, '{{steps.a.m}}'] };
    expect(validateConfiguredProps(props, input, limits, { deferred })).toEqual(input);
    expect(() => validateConfiguredProps(props, { ...input, n: 'abc' }, limits, { deferred })).toThrow(/configured_props\.n: must be an integer/);
    expect(() => validateConfiguredProps(props, { ...input, list: ['x'] }, limits, { deferred })).toThrow(/configured_props\.list\[0\]: must be an integer/);
    expect(() => validateConfiguredProps(props, input, limits)).toThrow(/configured_props\.n: must be an integer/);
  });

  it('checks options membership on scalars', () => {
    const props: ConfigurableProp[] = [{ name: 'c', type: 'integer', options: [{ label: 'One', value: 1 }, 2] }];
    expect(check(props, { c: 2 })).toEqual({ c: 2 });
    expect(error(props, { c: 3 }).message).toMatch(/configured_props\.c: 3 is not one of the options: 1, 2/);
  });

  it('takes what Pipedream takes besides the options: the prop default, and "" on an optional prop', () => {
    const props: ConfigurableProp[] = [
      { name: 'order', type: 'string', options: ['asc', 'desc'], default: '' },
      { name: 'status', type: 'string', optional: true, options: ['open', 'closed'] },
      { name: 'kind', type: 'string', options: ['a', 'b'] },
    ];
    expect(check(props, { kind: 'a' })).toEqual({ order: '', kind: 'a' });
    expect(check(props, { order: '', status: '', kind: 'b' })).toEqual({ order: '', status: '', kind: 'b' });
    expect(error(props, { kind: '' }).message).toMatch(/configured_props\.kind: "" is not one of the options: "a", "b"/);
    expect(error(props, { kind: 'a', status: 'x' }).message).toMatch(/configured_props\.status: "x" is not one of the options/);
  });

  // Props as registry sources write them: static string options, { label, value } options, an async
  // options() (a method: no list to check against), string[] with options, and Connect's `__lv` form.
  it('checks options the way Pipedream sources declare them', () => {
    const props: ConfigurableProp[] = [
      { name: 'eventType', type: 'string', options: ['created', 'updated'] },
      { name: 'status', type: 'string', optional: true, options: [{ label: 'Open', value: 'open' }, { label: 'Closed', value: 'closed' }] },
      { name: 'channel', type: 'string', optional: true, remoteOptions: true },
      { name: 'events', type: 'string[]', optional: true, options: [{ label: 'Push', value: 'push' }, { label: 'Issues', value: 'issues' }] },
      { name: 'sheet', type: 'string', optional: true, remoteOptions: true, withLabel: true },
      { name: 'limit', type: 'integer', optional: true, options: [10, 50] },
    ];
    expect(check(props, { eventType: 'created', status: 'closed', channel: 'C0123-any-id', events: ['issues', 'push'] })).toEqual({
      eventType: 'created',
      status: 'closed',
      channel: 'C0123-any-id',
      events: ['issues', 'push'],
    });
    // The label is not the value.
    expect(error(props, { eventType: 'created', status: 'Open' }).message).toMatch(/configured_props\.status: "Open" is not one of the options: "open", "closed"/);
    expect(error(props, { eventType: 'created', events: ['push', 'pull'] }).message).toMatch(/configured_props\.events\[1\]: "pull" is not one of the options/);
    // { __lv: { label, value } } (an array of them for []): the value is checked and stored, with its label for withLabel props.
    expect(
      check(props, {
        eventType: { __lv: { label: 'Created', value: 'created' } },
        events: { __lv: [{ label: 'Push', value: 'push' }] },
        sheet: { __lv: { label: 'Sheet 1', value: 'gid-0' } },
        limit: { __lv: { label: '50', value: 50 } },
      }),
    ).toEqual({ eventType: 'created', events: ['push'], sheet: { label: 'Sheet 1', value: 'gid-0' }, limit: 50 });
    expect(error(props, { eventType: { __lv: { label: 'Deleted', value: 'deleted' } } }).message).toMatch(/configured_props\.eventType: "deleted" is not one of the options/);
    expect(error(props, { eventType: { __lv: 'created' } }).message).toMatch(/configured_props\.eventType: "__lv" takes \{ label, value \}/);
    expect(error(props, { eventType: 'created', limit: 20 }).message).toMatch(/configured_props\.limit: 20 is not one of the options: 10, 50/);
  });

  it('takes a prop value of 64KB at most (the spec\'s static prop value size), several of them in one document, and refuses a larger one with 413', () => {
    const props: ConfigurableProp[] = [
      { name: 's', type: 'string' },
      { name: 't', type: 'string', optional: true },
      { name: 'o', type: 'object', optional: true },
    ];
    const max = 'x'.repeat(64 * 1024);
    expect(validateConfiguredProps(props, { s: max, t: max }, limits)).toEqual({ s: max, t: max });
    // A string counts its UTF-8 bytes (a 2-byte character twice), not its JSON escaping.
    expect(validateConfiguredProps(props, { s: '"'.repeat(64 * 1024) }, limits)).toEqual({ s: '"'.repeat(64 * 1024) });
    const over = error(props, { s: `${max}x` });
    expect(over.status).toBe(413);
    expect(over.message).toBe('configured_props.s is 65537 bytes; the limit is 65536 (PROPS_MAX_BYTES)');
    expect(error(props, { s: 'é'.repeat(32 * 1024 + 1) }).status).toBe(413);
    expect(error(props, { s: 'v', o: { big: 'x'.repeat(64 * 1024) } }).message).toMatch(/^configured_props\.o is \d+ bytes; the limit is 65536/);
  });

  it('refuses a document over PROPS_DOCUMENT_MAX_BYTES with 413', () => {
    const e = error([{ name: 's', type: 'string' }, { name: 't', type: 'string' }], { s: 'x'.repeat(40 * 1024), t: 'y'.repeat(40 * 1024) }, { ...limits, propsDocumentMaxBytes: 64 * 1024 });
    expect(e.status).toBe(413);
    expect(e.message).toMatch(/^configured_props is \d+ bytes; the limit is 65536 \(PROPS_DOCUMENT_MAX_BYTES\)$/);
  });

  it('refuses a non-object document', () => {
    expect(error(all, [1]).message).toMatch(/configured_props must be an object/);
  });

  it('cron helpers', () => {
    expect(cronProblem('*/5 * * * *')).toBeUndefined();
    expect(cronProblem('0 0 * * * *')).toMatch(/5 fields/);
    expect(cronIntervalSeconds('*/5 * * * *')).toBe(300);
  });
});
