import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A source written the way registry sources write dynamic props: a prop marked `reloadProps`
 * whose value decides, in `additionalProps()`, which further props the source has (their
 * options, defaults, secrets, an app), read as `this.<name>` at run time.
 */
const DYNAMIC = `export default {
  key: "tracker-new-item",
  name: "New Item",
  version: "0.0.1",
  type: "source",
  props: {
    tracker: { type: "app", app: "tracker" },
    kind: { type: "string", label: "Kind", options: ["issues", "pulls"], reloadProps: true },
    timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } },
  },
  methods: {
    labelsFor(kind) { return kind === "issues" ? ["bug", "feature"] : ["ready"]; },
  },
  async additionalProps(previousPropDefs) {
    const props = { ...previousPropDefs };
    if (!this.kind) return props;
    props.labels = { type: "string[]", label: "Labels", options: this.labelsFor(this.kind) };
    props.state = { type: "string", label: "State", options: [{ label: "Open", value: "open" }, { label: "Closed", value: "closed" }], optional: true, default: "open" };
    props.webhookSecret = { type: "string", secret: true, optional: true };
    props.assignee = { type: "string", optional: true, async options({ page }) { return [this.kind + "-" + page]; } };
    if (this.kind === "issues") props.minComments = { type: "integer", min: 0, optional: true, default: 1 };
    else props.draft = { type: "boolean" };
    if (this.tracker.$auth.plan === "pro") props.slack = { type: "app", app: "slack" };
    return props;
  },
  async run(event) {
    this.$emit({
      kind: this.kind, labels: this.labels, state: this.state, minComments: this.minComments, draft: this.draft,
      secretLength: (this.webhookSecret || "").length, slackToken: this.slack ? this.slack.$auth.oauth_access_token : null,
    }, { id: String(event.timestamp || Date.now()) });
  },
};`;

/**
 * A source whose `additionalProps(previousPropDefs)` reads its argument, as registry sources do: it keeps
 * the columns it added before (`previousPropDefs` holds them after the static props) and adds one for
 * the column chosen now; the options of `sortBy` are the columns it returns.
 */
const COLUMNS = `export default {
  key: "sheet-new-row",
  name: "New Row",
  version: "0.0.1",
  type: "source",
  props: {
    sheet: { type: "app", app: "sheet" },
    column: { type: "string", label: "Column", options: ["name", "email", "phone"], reloadProps: true },
    timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } },
  },
  async additionalProps(previousPropDefs) {
    const props = {};
    for (const [name, def] of Object.entries(previousPropDefs)) if (name.startsWith("col_")) props[name] = def;
    if (!this.column) return props;
    props["col_" + this.column] = { type: "string", label: "Header of " + this.column, optional: true, default: this.column.toUpperCase() };
    const columns = Object.keys(props);
    props.sortBy = { type: "string", label: "Sort by", optional: true, async options() { return columns; } };
    return props;
  },
  async run(event) {
    this.$emit({ name: this.col_name, email: this.col_email, phone: this.col_phone }, { id: String(event.timestamp || Date.now()) });
  },
};`;

describe('additionalProps(): props that depend on configured values', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let componentId: string;

  beforeAll(async () => {
    // A 2 s minimum: the timer test sees a component's 1 s schedule raised to it, and several firings in a few seconds.
    system = await startSystem({ COMPONENT_READ_TIMEOUT_MS: '8000', TIMER_MIN_INTERVAL_SECONDS: '2' });
    user = createUser(system);
    api = client(system, user.apiKey);
    const res = await api.post('/components', { component_code: DYNAMIC });
    expect(res.status).toBe(200);
    componentId = res.body.data.id;
    // The component's own props are the static ones: the others depend on a source's values.
    expect(res.body.data.configurable_props.map((p: { name: string }) => p.name)).toEqual(['tracker', 'kind', 'timer']);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const names = (props: { name: string }[]) => props.map((p) => p.name);
  const emitted = (sourceId: string, n: number) =>
    eventually(
      async () => {
        await api.post(`/sources/${sourceId}/run`, {});
        const res = await api.get(`/sources/${sourceId}/event_summaries?limit=10&expand=event`);
        return res.status === 200 && res.body.data.length >= n ? (res.body.data[0].event as Record<string, unknown>) : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000, what: 'an emitted event' },
    );

  it('deploys with the props additionalProps() returns for the values: validated, defaulted, shown, and this.<name> at run time', async () => {
    const res = await api.post('/sources', {
      component_id: componentId,
      configured_props: { tracker: { $auth: { plan: 'pro' } }, kind: 'issues', labels: ['bug'], webhookSecret: 's3cret', slack: { $auth: { oauth_access_token: 'xoxb-1' } } },
    });
    expect(res.status).toBe(200);
    const source = res.body.data;
    expect(names(source.configurable_props)).toEqual(['tracker', 'kind', 'timer', 'labels', 'state', 'webhookSecret', 'assignee', 'minComments', 'slack']);
    expect(source.configurable_props.find((p: { name: string }) => p.name === 'labels')).toEqual({ name: 'labels', type: 'string[]', label: 'Labels', options: ['bug', 'feature'] });
    expect(source.configured_props).toMatchObject({ kind: 'issues', labels: ['bug'], state: 'open', minComments: 1, webhookSecret: '********', slack: { $auth: '********' } });
    expect(await emitted(source.id, 1)).toEqual({ kind: 'issues', labels: ['bug'], state: 'open', minComments: 1, secretLength: 6, slackToken: 'xoxb-1' });

    const got = await api.get(`/sources/${source.id}`);
    expect(names(got.body.data.configurable_props)).toEqual(names(source.configurable_props));
  });

  it('checks the values of added props like static ones', async () => {
    const base = { tracker: { $auth: {} }, kind: 'issues' };
    for (const [props, message] of [
      [{ ...base, labels: ['wontfix'] }, /configured_props\.labels\[0\]: "wontfix" is not one of the options: "bug", "feature"/],
      [{ ...base, labels: ['bug'], minComments: -1 }, /configured_props\.minComments: must be at least 0/],
      [{ ...base }, /configured_props\.labels: is required \(type string\[\]\)/],
      [{ ...base, labels: ['bug'], draft: true }, /configured_props has unknown prop draft/],
      [{ ...base, labels: ['bug'], slack: { $auth: {} } }, /configured_props has unknown prop slack/],
      [{ tracker: { $auth: {} }, kind: 'commits', labels: ['bug'] }, /configured_props\.kind: "commits" is not one of the options/],
    ] as const) {
      const res = await api.post('/sources', { component_id: componentId, configured_props: props });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_props');
      expect(res.body.error).toMatch(message);
    }
  });

  it('recomputes the props on update, keeping masked secrets', async () => {
    const created = await api.post('/sources', { component_id: componentId, configured_props: { tracker: { $auth: {} }, kind: 'issues', labels: ['feature'], webhookSecret: 'abc' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    const upd = await api.put(`/sources/${id}`, { component_id: componentId, configured_props: { tracker: { $auth: {} }, kind: 'pulls', labels: ['ready'], draft: false, webhookSecret: '********' } });
    expect(upd.status).toBe(200);
    // It returns { ...previousPropDefs, … }: minComments, added for "issues" last time, stays (as on Pipedream).
    expect(names(upd.body.data.configurable_props)).toEqual(['tracker', 'kind', 'timer', 'labels', 'state', 'webhookSecret', 'assignee', 'minComments', 'draft']);
    expect(upd.body.data.configured_props).toMatchObject({ kind: 'pulls', labels: ['ready'], draft: false, state: 'open', minComments: 1 });
    expect(await emitted(id, 1)).toEqual({ kind: 'pulls', labels: ['ready'], state: 'open', minComments: 1, draft: false, secretLength: 3, slackToken: null });
    // An update that changes nothing else (no configured_props) keeps the added props and their values.
    const again = await api.put(`/sources/${id}`, { component_id: componentId, active: true });
    expect(again.status).toBe(200);
    expect(again.body.data.configured_props).toMatchObject({ kind: 'pulls', labels: ['ready'], draft: false });
  });

  it('reloads the props of a form being filled in, and lists the options of an added prop', async () => {
    const reload = (configured?: Record<string, unknown>) => api.post(`/components/${componentId}/props/reload`, configured ? { configured_props: configured } : {});
    expect(names((await reload()).body.data.configurable_props)).toEqual(['tracker', 'kind', 'timer']);
    const pulls = await reload({ kind: 'pulls' });
    expect(pulls.status).toBe(200);
    expect(names(pulls.body.data.configurable_props)).toEqual(['tracker', 'kind', 'timer', 'labels', 'state', 'webhookSecret', 'assignee', 'draft']);
    expect(pulls.body.data.configurable_props.find((p: { name: string }) => p.name === 'assignee')).toEqual({ name: 'assignee', type: 'string', optional: true, remoteOptions: true });
    const bad = await reload({ kind: 5 });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('configured_props.kind: must be a string, got 5');

    // A component without additionalProps() answers its own props, after checking the values given as a deploy does.
    const plain = await api.post('/components', { component_code: `export default { name: "Plain", version: "0.0.1", props: { n: { type: "integer", max: 5 }, color: { type: "string", options: ["red", "blue"] } }, async run() {} };` });
    expect(plain.status).toBe(200);
    const reloadPlain = (configured: Record<string, unknown>) => api.post(`/components/${plain.body.data.id}/props/reload`, { configured_props: configured });
    const fine = await reloadPlain({ n: 3 });
    expect(fine.status).toBe(200);
    expect(names(fine.body.data.configurable_props)).toEqual(['n', 'color']);
    for (const [given, message] of [
      [{ n: 99 }, 'configured_props.n: must be at most 5, got 99'],
      [{ n: 'abc' }, 'configured_props.n: must be an integer, got "abc"'],
      [{ color: 'green' }, /configured_props\.color/],
      [{ zz: 1 }, /unknown prop zz/],
    ] as [Record<string, unknown>, string | RegExp][]) {
      const refused = await reloadPlain(given);
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('invalid_props');
      expect(refused.body.error).toMatch(message);
    }

    const opts = await api.post(`/components/${componentId}/props/assignee/options`, { configured_props: { kind: 'issues' }, page: 1 });
    expect(opts.status).toBe(200);
    expect(opts.body.data.options).toEqual(['issues-1']);
    // Without the value it depends on, the prop does not exist.
    expect((await api.post(`/components/${componentId}/props/assignee/options`, {})).status).toBe(404);
  });

  it('passes the props it added last time as previousPropDefs: none on a deploy, the stored ones on an update and on a reload for that source', async () => {
    const saved = await api.post('/components', { component_code: COLUMNS });
    expect(saved.status).toBe(200);
    const id = saved.body.data.id;
    const statics = ['sheet', 'column', 'timer'];
    const reload = (configured: Record<string, unknown>, extra: Record<string, unknown> = {}) => api.post(`/components/${id}/props/reload`, { configured_props: configured, ...extra });

    // A form for a new source: previousPropDefs holds the static props only.
    expect(names((await reload({ column: 'name' })).body.data.configurable_props)).toEqual([...statics, 'col_name', 'sortBy']);
    const created = await api.post('/sources', { component_id: id, configured_props: { sheet: { $auth: {} }, column: 'name', col_name: 'Full name' } });
    expect(created.status).toBe(200);
    const sourceId = created.body.data.id;
    expect(names(created.body.data.configurable_props)).toEqual([...statics, 'col_name', 'sortBy']);

    // Editing that source: the reload starts from the props it added for the source, as the update will.
    const editing = await reload({ column: 'email' }, { source_id: sourceId });
    expect(editing.status).toBe(200);
    expect(names(editing.body.data.configurable_props)).toEqual([...statics, 'col_name', 'col_email', 'sortBy']);
    expect(names((await reload({ column: 'email' })).body.data.configurable_props)).toEqual([...statics, 'col_email', 'sortBy']);
    const sortBy = (extra: Record<string, unknown>) => api.post(`/components/${id}/props/sortBy/options`, { configured_props: { column: 'email' }, ...extra });
    expect((await sortBy({ source_id: sourceId })).body.data.options).toEqual(['col_name', 'col_email']);
    expect((await sortBy({})).body.data.options).toEqual(['col_email']);

    const updated = await api.put(`/sources/${sourceId}`, { component_id: id, configured_props: { sheet: { $auth: {} }, column: 'email', col_name: 'Full name' } });
    expect(updated.status).toBe(200);
    expect(names(updated.body.data.configurable_props)).toEqual([...statics, 'col_name', 'col_email', 'sortBy']);
    expect(updated.body.data.configured_props).toMatchObject({ column: 'email', col_name: 'Full name', col_email: 'EMAIL' });
    expect(await emitted(sourceId, 1)).toEqual({ name: 'Full name', email: 'EMAIL' });
    // Each update starts from the props of the one before.
    const again = await api.put(`/sources/${sourceId}`, { component_id: id, configured_props: { sheet: { $auth: {} }, column: 'phone', col_name: 'Full name' } });
    expect(names(again.body.data.configurable_props)).toEqual([...statics, 'col_name', 'col_email', 'col_phone', 'sortBy']);
    expect(names((await api.get(`/sources/${sourceId}`)).body.data.configurable_props)).toEqual(names(again.body.data.configurable_props));

    // source_id is checked: its type, and that the caller can reach the source (the same 404 either way).
    const wrongType = await reload({ column: 'email' }, { source_id: 5 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body).toMatchObject({ code: 'invalid_request', details: { field: 'source_id' } });
    const other = client(system, createUser(system).apiKey);
    const theirs = await other.post('/components', { component_code: COLUMNS });
    for (const [caller, component, source] of [
      [api, id, 'dc_nope'],
      [other, theirs.body.data.id, sourceId],
    ] as const) {
      const res = await caller.post(`/components/${component}/props/reload`, { configured_props: { column: 'email' }, source_id: source });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'not_found', error: `source ${source} not found` });
    }
  });

  it('refuses a deploy when additionalProps() throws, hangs or returns something that is not props', async () => {
    const cases: [string, RegExp][] = [
      ['throw new Error("the tracker API is down");', /additionalProps\(\) failed: the tracker API is down/],
      ['await new Promise(() => {});', /additionalProps\(\) failed: .*timed out/],
      ['return ["labels"];', /additionalProps\(\) failed: additionalProps\(\) must return an object of prop definitions/],
      ['return { x: { type: "$.interface.http" } };', /additionalProps\(\): prop "x": \$\.interface\.http cannot be added by additionalProps\(\)/],
    ];
    for (const [body, message] of cases) {
      const code = `export default { name: "Broken", version: "0.0.1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } } }, async additionalProps() { ${body} }, async run() {} };`;
      const saved = await api.post('/components', { component_code: code });
      expect(saved.status).toBe(200);
      const res = await api.post('/sources', { component_id: saved.body.data.id, configured_props: {} });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(message);
    }
  });

  it('runs a source on the timer additionalProps() adds (the component declares none), and stops when an update takes it away', async () => {
    // As Trello's card-due-date-reminder: the schedule exists only once the time before a reminder is chosen.
    const code = `export default {
      name: "Reminder", version: "0.0.1", type: "source",
      props: { every: { type: "integer", optional: true, reloadProps: true } },
      async additionalProps() { return this.every ? { timer: { type: "$.interface.timer", default: { intervalSeconds: this.every } } } : {}; },
      async run(event) { this.$emit({ timer: this.timer, timestamp: event.timestamp }); },
    };`;
    const saved = await api.post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    const res = await api.post('/sources', { component_id: saved.body.data.id, configured_props: { every: 1 } });
    expect(res.status).toBe(200);
    const id = res.body.data.id;
    expect(res.body.data.configurable_props).toEqual([
      { name: 'every', type: 'integer', optional: true, reloadProps: true },
      { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 1 } },
    ]);
    // Stored in the API's form, as a declared timer's value is, and raised to TIMER_MIN_INTERVAL_SECONDS:
    // the component's own default is not refused, but it cannot run the source more often than the operator allows.
    const timer = { cron: null, interval_seconds: 2 };
    expect(res.body.data.configured_props.timer).toEqual(timer);
    const events = async () => ((await api.get(`/sources/${id}/event_summaries?limit=100&expand=event`)).body.data as { event: unknown }[]).map((s) => s.event);
    const fired = await eventually(async () => ((await events()).length >= 3 ? events() : undefined), { timeoutMs: 30_000, intervalMs: 500, what: 'three timer events' });
    // `this.timer` is the component's own form, as for a declared timer.
    for (const e of fired) expect(e).toEqual({ timer: { intervalSeconds: 2 }, timestamp: expect.any(Number) });
    const stamps = fired.map((e) => (e as { timestamp: number }).timestamp).sort((a, b) => a - b);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i] - stamps[i - 1]).toBeGreaterThanOrEqual(2);

    // A value given for the added timer is checked like a static one (TIMER_MIN_INTERVAL_SECONDS).
    const componentId = saved.body.data.id;
    const tooOften = await api.put(`/sources/${id}`, { component_id: componentId, configured_props: { every: 1, timer: { intervalSeconds: 1 } } });
    expect(tooOften.status).toBe(400);
    expect(tooOften.body.error).toMatch(/configured_props\.timer: intervalSeconds must be at least 2/);

    const updated = await api.put(`/sources/${id}`, { component_id: componentId, configured_props: {} });
    expect(updated.status).toBe(200);
    expect(updated.body.data.configurable_props.map((p: { name: string }) => p.name)).toEqual(['every']);
    // Once the update is applied the timer stops: at most one more event (one already under way), then none for 4 s.
    await new Promise((r) => setTimeout(r, 3000));
    const settled = (await events()).length;
    await new Promise((r) => setTimeout(r, 4000));
    expect((await events()).length).toBe(settled);
  });
});
