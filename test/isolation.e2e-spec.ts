import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { client, createUser, TestUser } from './support/accounts';
import { need } from './support/env';
import { eventually, freePort, startSystem, System } from './support/system';
import { attackerSource, HOOK_SOURCE, VICTIM_SOURCE } from './isolation/probes';

/**
 * Tenant isolation, attacked from inside: account A deploys hostile code (as a
 * source's run, as top-level module code, as a prop's options()), account B a
 * source with a secret. Every way out must fail while B's source keeps working.
 */
describe('tenant isolation (SANDBOX_ISOLATION=namespaces, the default)', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let loopback: Server;
  let victim: { id: string; url: string };

  const deploy = async (user: TestUser, code: string, props: Record<string, unknown> = {}): Promise<{ id: string; url: string }> => {
    const res = await client(system, user.apiKey).post('/sources', { component_code: code, configured_props: props });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  };
  const trigger = (url: string, body: unknown = {}) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  beforeAll(async () => {
    loopback = createServer((_req, res) => res.end('loopback service'));
    await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', () => r()));
    // Loopback is closed to component code here, as ALLOW_LOOPBACK=false says (the test harness otherwise opens it).
    system = await startSystem({ SANDBOX_TMP_MB: '16', ALLOW_LOOPBACK: 'false', HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '20000', RUNNER_METRICS_PORT: String(await freePort()) });
    a = createUser(system);
    b = createUser(system);
    victim = await deploy(b, VICTIM_SOURCE, { token: 'b-secret-token-123' });
  });
  afterAll(async () => {
    await system?.stop();
    loopback?.close();
  });

  it('runs a victim source normally', async () => {
    const res = await eventually(async () => {
      const r = await trigger(victim.url, { n: 1 });
      return r.status === 200 ? r : undefined;
    }, { what: 'the victim source to answer', timeoutMs: 30_000 });
    expect(await res.text()).toBe('victim ok 18');
  });

  it('stops every way out of a source run', async () => {
    const natsPort = Number(new URL(need('TEST_NATS_URL').replace(/^nats:/, 'http:')).port || 4222);
    const attacker = await deploy(a, attackerSource({
      dataDir: system.env.DATA_DIR,
      root: join(__dirname, '..'),
      natsPort,
      pgPort: Number(new URL(system.databaseUrl.replace(/^postgres(ql)?:/, 'http:')).port || 5432),
      apiPort: Number(system.env.PORT),
      loopbackPort: (loopback.address() as AddressInfo).port,
    }));
    const res = await eventually(async () => {
      const r = await trigger(attacker.url);
      return r.status === 200 ? r : undefined;
    }, { what: 'the attacker source to answer', timeoutMs: 30_000 });
    const report = (await res.json()) as Record<string, string>;
    const denied = Object.keys(report).filter((k) => k !== 'tmpWrite');
    for (const probe of denied) expect([probe, report[probe]]).toEqual([probe, expect.stringMatching(/^DENIED/)]);
    // Its own /tmp works, up to SANDBOX_TMP_MB.
    expect(report.tmpWrite).toBe('OK scratch');
    expect(report.tmpFill).toBe('DENIED ENOSPC');
    // Refused by the egress proxy, naming why.
    expect(report.nats).toMatch(/ECONNREFUSED .*service of the platform/);
    expect(report.loopback).toMatch(/ECONNREFUSED .*loopback/);
    expect(report.metadata).toMatch(/ECONNREFUSED .*metadata/);
    // And the victim still works.
    expect(await (await trigger(victim.url, { n: 2 })).text()).toBe('victim ok 18');
  });

  it('keeps a hook left in one account\'s sandbox away from another account\'s runs', async () => {
    const hook = await deploy(a, HOOK_SOURCE);
    const first = await eventually(async () => {
      const r = await trigger(hook.url);
      return r.status === 200 ? r : undefined;
    }, { what: 'the hook source', timeoutMs: 30_000 });
    expect(await first.json()).toEqual([]);
    expect(await (await trigger(victim.url, { n: 3 })).text()).toBe('victim ok 18');
    const after = await trigger(hook.url);
    expect(await after.text()).not.toContain('b-secret-token-123');
  });

  it('reads a component in a sandbox: the error of hostile top-level code shows no platform secrets', async () => {
    const res = await client(system, a.apiKey).post('/components', { component_code: 'throw new Error(require("fs").readFileSync("/proc/self/environ", "utf8"))' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_component');
    expect(res.text).toMatch(/ERR_ACCESS_DENIED|restricted/);
    expect(res.text).not.toContain(system.databaseUrl);
    expect(res.text).not.toMatch(/NATS_URL|DATABASE_URL|SECRETS_KEY/);
    const env = await client(system, a.apiKey).post('/components', { component_code: 'module.exports = { name: "e", version: "1", props: {}, async run() {} }; if (Object.keys(process.env).length) throw new Error("env: " + Object.keys(process.env).join(","));' });
    expect(env.status).toBe(200);
  });

  it('calls options() in the caller\'s sandbox', async () => {
    const code = `module.exports = { name: "Opts", version: "1", props: { pick: { type: "string", label: "Pick", async options() { const fs = require("fs"); let env; try { env = fs.readFileSync("/proc/self/environ", "utf8"); } catch (e) { env = e.code; } let key; try { key = fs.readFileSync(${JSON.stringify(system.env.DATA_DIR + '/secrets.key')}, "hex"); } catch (e) { key = e.code; } return [env, key, String(process.getuid())]; } } }, async run() {} };`;
    const saved = await client(system, a.apiKey).post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    const res = await client(system, a.apiKey).post(`/components/${saved.body.data.id}/props/pick/options`, {});
    expect(res.status).toBe(200);
    const [env, key, uid] = res.body.data.options as string[];
    expect(env).toBe('ERR_ACCESS_DENIED');
    // Not mounted (ENOENT; a DATA_DIR under /tmp would be inside the sandbox's own /tmp) or not readable.
    expect(key).toMatch(/^(ERR_ACCESS_DENIED|ENOENT)$/);
    expect(uid).not.toBe('0');
  });

  it('says which isolation is on in /healthz of the api and the runner', async () => {
    expect(((await (await fetch(`${system.origin}/healthz`)).json()) as { isolation: string }).isolation).toBe('namespaces');
    expect(((await (await fetch(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/healthz`)).json()) as { isolation: string }).isolation).toBe('namespaces');
  });
});
