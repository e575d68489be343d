import { client, createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';

/** A source whose `token` is a secret, in the form a version of its code gives it. */
const source = (token: string, github = '{ type: "app", app: "github", optional: true }') => `export default {
  key: "secret-answers",
  name: "Secret Answers",
  version: "0.0.1",
  type: "source",
  props: { token: ${token}, github: ${github} },
  async run() {},
};`;

const SECRET = { type: 'string', secret: true };
const SECRET_WITH_OPTIONS = { ...SECRET, options: ['one', 'two'] };

describe('sources: a secret prop value never comes back in an answer', () => {
  let system: System;
  let user: TestUser;
  /** The API as a client that honours a 503's "retry later": a loaded machine (CI) answers one now and then. */
  const api = () => {
    const c = client(system, user.apiKey);
    const again =
      <A extends unknown[]>(call: (...args: A) => ReturnType<typeof c.get>) =>
      async (...args: A): ReturnType<typeof c.get> => {
        for (let i = 0; ; i++) {
          const res = await call(...args);
          if (res.status !== 503 || i >= 10) return res;
          await new Promise((r) => setTimeout(r, 1000));
        }
      };
    return { get: again(c.get), post: again(c.post), put: again(c.put), del: again(c.del) };
  };

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
  });
  afterAll(() => system?.stop());

  it('refuses a secret value that is no option, or of the wrong type, without repeating it', async () => {
    const notAnOption = await api().post('/sources', { component_code: source(JSON.stringify(SECRET_WITH_OPTIONS)), configured_props: { token: 'sent-secret-1' } });
    expect([notAnOption.status, notAnOption.body.code, notAnOption.body.details]).toEqual([400, 'invalid_props', { prop: 'token' }]);
    expect(notAnOption.body.error).toMatch(/^configured_props\.token: the secret value is not one of the options: "one", "two"$/);
    const wrongType = await api().post('/sources', { component_code: source(JSON.stringify(SECRET)), configured_props: { token: 918273645 } });
    expect([wrongType.status, wrongType.body.code]).toEqual([400, 'invalid_props']);
    expect(wrongType.body.error).toBe('configured_props.token: must be a string, got a number');
    expect(notAnOption.text + wrongType.text).not.toMatch(/sent-secret-1|918273645/);
    expect(system.logs('api')).not.toMatch(/sent-secret-1|918273645/);
  });

  it('an update whose new code refuses the stored secret says so without showing it', async () => {
    const created = await api().post('/sources', { component_code: source(JSON.stringify(SECRET)), configured_props: { token: 'stored-secret-2' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    const updated = await api().put(`/sources/${id}`, { component_code: source(JSON.stringify(SECRET_WITH_OPTIONS)) });
    expect([updated.status, updated.body.code]).toEqual([400, 'invalid_props']);
    expect(updated.text).not.toContain('stored-secret-2');
    expect(system.logs('api')).not.toContain('stored-secret-2');
  });

  it('an update whose new code makes a secret or app prop a plain one does not carry the hidden value over into view', async () => {
    const created = await api().post('/sources', { component_code: source(JSON.stringify(SECRET)), configured_props: { token: 'stored-secret-3', github: { $auth: { oauth_access_token: 'stored-auth-3' } } } });
    const id = created.body.data.id;
    const plain = source(JSON.stringify({ type: 'string' }), '{ type: "object", optional: true }');
    const updated = await api().put(`/sources/${id}`, { component_code: plain });
    expect([updated.status, updated.body.code, updated.body.details]).toEqual([400, 'invalid_props', { prop: 'token' }]);
    expect(updated.body.error).toMatch(/^configured_props\.token: is required/);
    const read = await api().get(`/sources/${id}`);
    expect(read.body.data.configured_props).toEqual({ token: '********', github: { $auth: '********' } });
    // Given again, the token is taken and shown as the plain prop it now is; the app's $auth is not kept as an object.
    const given = await api().put(`/sources/${id}`, { component_code: plain, configured_props: { token: 'plain-now' } });
    expect([given.status, given.body.data?.configured_props]).toEqual([200, { token: 'plain-now' }]);
    expect(JSON.stringify([updated.body, read.body, given.body])).not.toMatch(/stored-secret-3|stored-auth-3/);
  });
  it('the same holds for a secret prop that additionalProps() adds, and a mask sent back keeps it while it stays secret', async () => {
    const dynamic = (n: number, secret: boolean) => `export default {
      key: "secret-answers-dynamic", name: "Secret Answers Dynamic", version: "0.0.${n}", type: "source",
      props: { mode: { type: "string", reloadProps: true } },
      async additionalProps() { return { token: { type: "string", secret: ${secret} } }; },
      async run() {},
    };`;
    const created = await api().post('/sources', { component_code: dynamic(1, true), configured_props: { mode: 'm', token: 'stored-secret-4' } });
    expect([created.status, created.body.data?.configured_props]).toEqual([200, { mode: 'm', token: '********' }]);
    const id = created.body.data.id;
    const kept = await api().put(`/sources/${id}`, { component_id: created.body.data.component_id, configured_props: { mode: 'n', token: '********' } });
    expect([kept.status, kept.body.data?.configured_props]).toEqual([200, { mode: 'n', token: '********' }]);
    const carried = await api().put(`/sources/${id}`, { component_code: dynamic(2, false) });
    expect([carried.status, carried.body.details]).toEqual([400, { prop: 'token' }]);
    const masked = await api().put(`/sources/${id}`, { component_code: dynamic(2, false), configured_props: { mode: 'n', token: '********' } });
    expect([masked.status, masked.body.data?.configured_props]).toEqual([200, { mode: 'n', token: '********' }]);
    expect(JSON.stringify([kept.body, carried.body, masked.body, (await api().get(`/sources/${id}`)).body])).not.toContain('stored-secret-4');
  });

  it("an additionalProps() that throws with a secret's value in its message has it hidden in the 400", async () => {
    const code = `export default {
      key: "secret-answers-throws", name: "Secret Answers Throws", version: "0.0.1", type: "source",
      props: { mode: { type: "string", reloadProps: true }, token: { type: "string", secret: true }, github: { type: "app", app: "github" } },
      async additionalProps() { if (this.mode === "check") throw new Error("bad token " + this.token + " " + JSON.stringify(this.github.$auth)); return {}; },
      async run() {},
    };`;
    const created = await api().post('/sources', { component_code: code, configured_props: { mode: 'ok', token: 'stored-secret-5', github: { $auth: { oauth_access_token: 'stored "auth" 5' } } } });
    expect(created.status).toBe(200);
    const checked = await api().put(`/sources/${created.body.data.id}`, { component_id: created.body.data.component_id, configured_props: { mode: 'check', token: '********', github: { $auth: '********' } } });
    expect([checked.status, checked.body.code, checked.body.error]).toEqual([400, 'additional_props_failed', 'additionalProps() failed: bad token ********** {"oauth_access_token":"**********"}']);
  });

  it('an additionalProps() message cut at 2,000 characters through a secret shows none of it', async () => {
    const code = `export default {
      key: "secret-answers-long", name: "Secret Answers Long", version: "0.0.1", type: "source",
      props: { pad: { type: "integer", reloadProps: true }, token: { type: "string", secret: true } },
      async additionalProps() { throw new Error("x".repeat(this.pad) + this.token + " end"); },
      async run() {},
    };`;
    const token = 'Zq9straddling-secret-7';
    for (const pad of [1990, 1999, 1980]) {
      const res = await api().post('/sources', { component_code: code, configured_props: { pad, token } });
      expect([res.status, res.body.code]).toEqual([400, 'additional_props_failed']);
      const shown = String(res.body.error).replace('additionalProps() failed: ', '');
      expect(shown.startsWith('x'.repeat(pad))).toBe(true);
      expect(shown.slice(pad)).toMatch(/^\*+(…| end)$/);
      expect(shown.length).toBeLessThanOrEqual(2001);
      expect(res.text).not.toContain('Zq9');
    }
  });

  it('props reload and options read a mask sent back as the stored secret, as an update does; with none stored it is a 400', async () => {
    const code = `export default {
      key: "secret-answers-reload", name: "Secret Answers Reload", version: "0.0.1", type: "source",
      props: {
        token: { type: "string", secret: true, reloadProps: true },
        pick: { type: "string", optional: true, async options() { if (this.token === "boom") throw new Error("no " + this.token); return [this.token === "********" ? "the mask" : this.token.length + " chars"]; } },
      },
      async additionalProps() { return { seen: { type: "string", optional: true, label: this.token === "********" ? "the mask" : this.token.length + " chars" } }; },
      async run() {},
    };`;
    const created = await api().post('/sources', { component_code: code, configured_props: { token: 'stored-secret-8' } });
    expect(created.status).toBe(200);
    const { id, component_id: componentId } = created.body.data;
    const label = (res: { body: { data?: { configurable_props?: { name: string; label?: string }[] } } }) => res.body.data?.configurable_props?.find((p) => p.name === 'seen')?.label;
    const reloaded = await api().post(`/components/${componentId}/props/reload`, { source_id: id, configured_props: { token: '********' } });
    expect([reloaded.status, label(reloaded)]).toEqual([200, '15 chars']);
    const options = await api().post(`/components/${componentId}/props/pick/options`, { source_id: id, configured_props: { token: '********' } });
    expect([options.status, options.body.data?.options]).toEqual([200, ['15 chars']]);
    const given = await api().post(`/components/${componentId}/props/reload`, { source_id: id, configured_props: { token: 'given' } });
    expect([given.status, label(given)]).toEqual([200, '5 chars']);
    for (const path of ['props/reload', 'props/pick/options']) {
      const none = await api().post(`/components/${componentId}/${path}`, { configured_props: { token: '********' } });
      expect([none.status, none.body.code, none.body.error]).toEqual([400, 'invalid_props', 'configured_props.token: "********" keeps the secret stored for token, and none is: give its value']);
    }
    const failed = await api().post(`/components/${componentId}/props/pick/options`, { configured_props: { token: 'boom' } });
    expect([failed.status, failed.body.code, failed.body.error]).toEqual([400, 'options_failed', 'options() of prop pick failed: no **********']);
    expect(JSON.stringify([reloaded.body, options.body])).not.toContain('stored-secret-8');
  });
});
