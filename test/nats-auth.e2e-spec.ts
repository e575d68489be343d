import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, ConnectionOptions, NatsConnection } from 'nats';
import { loadConfig } from '@app/config';
import { encodeJson, Names, ROUTER_DURABLE } from '@app/contracts';
import { NatsService } from '@app/nats';
import { natsAdmin, natsAdminEnv, need } from './support/env';
import { addNatsInstallation, AppName, eventually, NatsCredentials, rotateNatsPassword, startSystem, System } from './support/system';

/**
 * The run's NATS server as the apps meet it: no way in without credentials, and
 * each app's user limited to what that app does (libs/nats/src/nats-permissions.ts).
 * The probing installation's prefix holds the run's probe marker, so the refusals
 * it provokes are not counted as apps refused a subject.
 */
describe('NATS authentication and per-app permissions', () => {
  const prefix = `t_${need('TEST_RUN_ID')}${need('TEST_NATS_PROBE_MARKER')}${randomBytes(3).toString('hex')}`;
  const names = new Names(prefix);
  let creds: NatsCredentials;
  let creator: NatsService;
  const open: NatsConnection[] = [];

  const as = async (app: AppName): Promise<NatsConnection> => {
    const c = creds[app];
    const nc = await connect({ servers: need('TEST_NATS_URL'), user: c.user, pass: c.password, inboxPrefix: c.inboxPrefix, maxReconnectAttempts: 0 });
    open.push(nc);
    return nc;
  };
  const refused = async (opts: ConnectionOptions): Promise<string> => {
    try {
      const nc = await connect({ ...opts, maxReconnectAttempts: 0, timeout: 5_000 });
      await nc.close();
      return 'connected';
    } catch (e) {
      return (e as { code?: string }).code ?? (e as Error).message;
    }
  };
  const kvPut = async (nc: NatsConnection, bucket: string, key: string): Promise<void> => {
    const kv = await nc.jetstream().views.kv(bucket, { bindOnly: true });
    await kv.put(key, encodeJson({ forged: true }));
  };
  const jsPublish = async (nc: NatsConnection, subject: string): Promise<void> => {
    await nc.jetstream().publish(subject, encodeJson({ forged: true }));
  };

  beforeAll(async () => {
    creds = await addNatsInstallation(prefix);
    // The streams and buckets, as the api creates them.
    creator = new NatsService(loadConfig({ ...natsAdminEnv(), NATS_PREFIX: prefix, DATA_DIR: mkdtempSync(join(tmpdir(), 'nats-auth-')), EMITS_MAX_BYTES: String(16 * 1024 * 1024) }), 'nats-auth-spec');
    await creator.start();
  });

  afterAll(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await creator?.stop();
  });

  it('refuses a connection without credentials, with a wrong password, or as an unknown user', async () => {
    const servers = need('TEST_NATS_URL');
    expect(await refused({ servers })).toBe('AUTHORIZATION_VIOLATION');
    expect(await refused({ servers, user: creds.runner.user, pass: 'not-the-password' })).toBe('AUTHORIZATION_VIOLATION');
    expect(await refused({ servers, user: 'nobody', pass: creds.runner.password })).toBe('AUTHORIZATION_VIOLATION');
    expect(await refused({ servers, token: creds.api.password })).toBe('AUTHORIZATION_VIOLATION');
    expect(await refused(natsAdmin())).toBe('connected');
  });

  it('lets the runner write actor state and publish emits, never desired state, code, deliveries or stream configs', async () => {
    const nc = await as('runner');
    await kvPut(nc, names.sourceStateBucket, 'dc_probe');
    await jsPublish(nc, names.emit('dc_probe'));
    await expect(kvPut(nc, names.sourcesBucket, '0.dc_victim')).rejects.toThrow(/Permissions Violation for Publish to "\$KV\.[^.]+_sources\.0\.dc_victim"/);
    const components = await nc.jetstream().views.os(names.componentsStore);
    await expect(components.putBlob({ name: 'forged' }, new Uint8Array([1]))).rejects.toThrow(/Permissions Violation/);
    await expect(jsPublish(nc, names.delivery('wh_victim'))).rejects.toThrow(/Permissions Violation for Publish to "[^"]*\.dlv\.wh_victim"/);
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(`KV_${names.sourceStateBucket}`);
    await expect(jsm.streams.update(info.config.name, { ...info.config, republish: { src: '>', dest: names.delivery('x') } })).rejects.toThrow(/Permissions Violation/);
    await expect(jsm.streams.purge(names.emitsStream)).rejects.toThrow(/Permissions Violation/);
  });

  it('keeps the api from publishing deliveries or usage and from writing actor state', async () => {
    const nc = await as('api');
    await kvPut(nc, names.sourcesBucket, '0.dc_probe');
    await jsPublish(nc, names.invocation(0, 'dc_probe'));
    // A range delete stores again the events it leaves of a message holding several, knowing whether the router had routed it.
    await jsPublish(nc, names.emit('dc_probe'));
    const jsm = await nc.jetstreamManager();
    await expect(jsm.consumers.info(names.emitsStream, ROUTER_DURABLE)).rejects.toThrow(/consumer not found/);
    await expect(jsPublish(nc, names.delivery('wh_victim'))).rejects.toThrow(/Permissions Violation/);
    await expect(jsPublish(nc, names.usage('u_victim'))).rejects.toThrow(/Permissions Violation/);
    await expect(kvPut(nc, names.sourceStateBucket, 'dc_victim')).rejects.toThrow(/Permissions Violation/);
  });

  it('keeps delivery out of every bucket and from publishing emits', async () => {
    const nc = await as('delivery');
    await jsPublish(nc, names.delivery('wh_probe'));
    await expect(jsPublish(nc, names.emit('dc_victim'))).rejects.toThrow(/Permissions Violation/);
    await expect(kvPut(nc, names.sourcesBucket, '0.dc_victim')).rejects.toThrow(/Permissions Violation/);
    await expect(kvPut(nc, names.sourceStateBucket, 'dc_victim')).rejects.toThrow(/Permissions Violation/);
  });

  it("gives each app its own reply subjects: the runner cannot listen to the api's replies, nor to another installation's subjects", async () => {
    const nc = await as('runner');
    const errors: string[] = [];
    const watch = (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(String(s.data));
    })();
    nc.subscribe(`${creds.api.inboxPrefix}.>`);
    nc.subscribe('_INBOX.>');
    nc.subscribe('t_other.emit.>');
    await nc.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(errors.filter((e) => /PERMISSIONS_VIOLATION/.test(e)).length).toBe(3);
    void watch;
  });

  it('generates the docker compose files: a config nats-server accepts, one password file per app, all private; rotate replaces every password', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nats-compose-'));
    const script = join(__dirname, '..', 'scripts', 'nats-auth.js');
    const run = (...args: string[]): string => {
      const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', NATS_PREFIX: 'acme' } });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      return r.stdout;
    };
    expect(run('compose', dir)).toContain('users admin, api, runner, delivery');
    const creds = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8')) as { apps: NatsCredentials; prefix: string };
    expect(creds.prefix).toBe('acme');
    for (const app of ['api', 'runner', 'delivery'] as const) {
      expect(readFileSync(join(dir, `${app}.password`), 'utf8')).toBe(`${creds.apps[app].password}\n`);
      expect(statSync(join(dir, `${app}.password`)).mode & 0o777).toBe(0o600);
    }
    expect(statSync(join(dir, 'nats-server.conf')).mode & 0o777).toBe(0o600);
    const conf = readFileSync(join(dir, 'nats-server.conf'), 'utf8');
    expect(conf).toContain('"$KV.acme_sources.>"');
    const bin = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => spawnSync(p, ['--version']).status === 0) ?? 'nats-server';
    const check = spawnSync(bin, ['-t', '-c', join(dir, 'nats-server.conf')], { encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`).toMatch(/configuration file .* is valid/);

    run('rotate', dir);
    const rotated = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8')) as { apps: NatsCredentials };
    for (const app of ['api', 'runner', 'delivery'] as const) {
      expect(rotated.apps[app].password).not.toBe(creds.apps[app].password);
      expect(readFileSync(join(dir, `${app}.password`), 'utf8')).toBe(`${rotated.apps[app].password}\n`);
      expect(readFileSync(join(dir, 'nats-server.conf'), 'utf8')).toContain(rotated.apps[app].password);
    }
  });

  describe('an app given a wrong password', () => {
    let system: System;
    beforeAll(async () => {
      // The api creates the streams the runner waits for.
      system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
    });
    afterAll(async () => {
      await system?.stop();
    });

    it('stops with an error naming NATS_USER, never printing the password', async () => {
      const wrong = `wrong-${randomBytes(8).toString('hex')}`;
      const started = system.startApp('runner', 'runner-wrong-password', { NATS_PASSWORD: wrong });
      await expect(started).rejects.toThrow(/exited/);
      const logs = system.logs('runner-wrong-password');
      expect(logs).toMatch(/cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+ \(NATS_URL, NATS_USER=t_\w+_runner with NATS_PASSWORD\): .*Authorization Violation/);
      expect(logs).not.toContain(wrong);
      expect(logs).not.toContain(system.nats.runner.password);
    });

    it('stops an app whose password was rotated and the server reloaded, so that its supervisor restarts it with the new one', async () => {
      const runner = await system.startApp('runner', 'runner-rotated');
      const fresh = await rotateNatsPassword(system.natsPrefix, 'runner');
      await eventually(async () => runner.exitCode !== null || runner.signalCode !== null, { timeoutMs: 20_000, what: 'the runner to stop' });
      const logs = system.logs('runner-rotated');
      expect(logs).toMatch(/the NATS connection is closed for good .*: stopping/);
      expect(logs).not.toContain(fresh);
      expect(logs).not.toContain(system.nats.runner.password);
      await system.startApp('runner', 'runner-new-password', { NATS_PASSWORD: fresh });
    });
  });
});
