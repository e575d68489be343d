import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { connect, NatsConnection } from 'nats';
import { isNatsUnavailable } from './nats-errors';
import { leaseConnectionOptions, NatsService, retryUnanswered } from './nats.service';
import { natsAdmin, natsAdminEnv, need } from '../../../test/support/env';

// Real NATS (the test run's server): the streams and buckets of DESIGN.md as the apps create them.
describe('NatsService streams and buckets', () => {
  const prefix = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'nats-svc-'));
  const started: NatsService[] = [];
  const start = async (env: Record<string, string> = {}): Promise<NatsService> => {
    const svc = new NatsService(loadConfig({ DATA_DIR: dataDir, ...natsAdminEnv(), NATS_PREFIX: prefix, ...env }), 'nats-service-spec');
    started.push(svc);
    await svc.start();
    return svc;
  };

  afterAll(async () => {
    const svc = started[0];
    if (svc?.nc && !svc.nc.isClosed()) {
      const n = svc.names;
      for (const s of [n.invocationsStream, n.emitsStream, n.deliveriesStream, n.usageStream]) await svc.jsm.streams.delete(s).catch(() => undefined);
      for (const b of [n.sourcesBucket, n.sourceStateBucket, n.leasesBucket]) await svc.jsm.streams.delete(`KV_${b}`).catch(() => undefined);
      await svc.jsm.streams.delete(`OBJ_${n.componentsStore}`).catch(() => undefined);
    }
    for (const s of started) await s.stop().catch(() => undefined);
  });

  it('limits EMITS by age (7 days) and size (1 GiB) by default, and follows changed settings on the next start', async () => {
    const svc = await start();
    const emits = await svc.jsm.streams.info(svc.names.emitsStream);
    expect(emits.config.max_age).toBe(7 * 24 * 3600 * 1e9);
    expect(emits.config.max_bytes).toBe(1024 ** 3);
    expect(emits.config.discard).toBe('old');
    const leases = await svc.jsm.streams.info(`KV_${svc.names.leasesBucket}`);
    expect(leases.config.max_age).toBe(10_000 * 1e6);

    const again = await start({ EMITS_MAX_BYTES: '0', EMITS_MAX_AGE_SECONDS: '3600' });
    const changed = await again.jsm.streams.info(again.names.emitsStream);
    expect(changed.config.max_bytes).toBe(-1);
    expect(changed.config.max_age).toBe(3600 * 1e9);
  });

  it('stops with a message naming EMITS_MAX_BYTES when NATS cannot reserve that much storage', async () => {
    const own = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
    const svc = new NatsService(loadConfig({ DATA_DIR: dataDir, ...natsAdminEnv(), NATS_PREFIX: own, EMITS_MAX_BYTES: String(2 ** 50) }), 'nats-service-spec');
    try {
      await expect(svc.start()).rejects.toThrow(/EMITS_MAX_BYTES=1125899906842624 .*insufficient storage/);
    } finally {
      await svc.jsm?.streams.delete(svc.names.invocationsStream).catch(() => undefined);
      await svc.stop().catch(() => undefined);
    }
  });

  it('applies a changed LEASE_TTL_MS to the existing leases bucket', async () => {
    const svc = await start({ LEASE_TTL_MS: '4000' });
    expect((await svc.jsm.streams.info(`KV_${svc.names.leasesBucket}`)).config.max_age).toBe(4000 * 1e6);
    const back = await start();
    expect((await back.jsm.streams.info(`KV_${back.names.leasesBucket}`)).config.max_age).toBe(10_000 * 1e6);
  });

  it('keeps the leases bucket on a connection of its own, which answers while the main connection is gone', async () => {
    const svc = await start();
    expect(svc.leaseNc).not.toBe(svc.nc);
    await svc.nc.close();
    const key = `p.spec-${randomBytes(3).toString('hex')}`;
    const revision = await svc.leases.create(key, new TextEncoder().encode('owner'));
    expect(new TextDecoder().decode((await svc.leases.get(key))?.value)).toBe('owner');
    await svc.leases.delete(key, { previousSeq: revision });
  });

  it("points the lease connection at the main connection's server first, without shuffling", () => {
    const config = loadConfig({ DATA_DIR: dataDir, ...natsAdminEnv(), NATS_URL: 'nats://10.0.0.1:4222, nats://10.0.0.2:4222,10.0.0.3:4222' });
    const options = leaseConnectionOptions(config, 'runner', '10.0.0.3:4222');
    expect(options.servers).toEqual(['10.0.0.3:4222', 'nats://10.0.0.1:4222', 'nats://10.0.0.2:4222']);
    expect(options.noRandomize).toBe(true);
    expect(options.name).toBe('runner.leases');
  });
});

// Real NATS: a request whose subject has a subscriber that never replies times out, as a loaded JetStream does.
describe('retryUnanswered', () => {
  const subject = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}.unanswered`;
  let nc: NatsConnection;
  let tries = 0;

  beforeAll(async () => {
    nc = await connect(natsAdmin());
    nc.subscribe(subject, { callback: () => tries++ });
    await nc.flush();
  });
  beforeEach(() => (tries = 0));
  afterAll(() => nc.drain());

  const unanswered = (): Promise<unknown> => nc.request(subject, undefined, { timeout: 100 });

  it('after its last try throws an error naming what it did (the start-up callers)', async () => {
    const e = await retryUnanswered('reading the subject', unanswered, { attempts: 3 }).catch((err: Error) => err);
    expect(tries).toBe(3);
    expect((e as Error).message).toBe('reading the subject: no answer from NATS after 3 tries (TIMEOUT)');
    expect(isNatsUnavailable(e)).toBe(false);
  });

  it('with rethrow, after its last try throws the NATS error itself (a request answers it 503)', async () => {
    const e = await retryUnanswered('reading the subject', unanswered, { attempts: 3, rethrow: true }).catch((err: Error) => err);
    expect(tries).toBe(3);
    expect((e as { code?: string }).code).toBe('TIMEOUT');
    expect(isNatsUnavailable(e)).toBe(true);
  });

  it('returns the first answer', async () => {
    let n = 0;
    await expect(retryUnanswered('reading the subject', () => (++n < 3 ? unanswered() : Promise.resolve('answer')), { attempts: 3, rethrow: true })).resolves.toBe('answer');
    expect(tries).toBe(2);
  });
});
