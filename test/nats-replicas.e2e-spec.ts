import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { Names } from '@app/contracts';
import { connect } from 'nats';
import { installationStreams, NatsService, StreamPublisher } from '@app/nats';
import { natsAdminEnv, need } from './support/env';
import { eventually, freePort } from './support/system';

interface ClusterNode {
  name: string;
  kill(signal?: string): Promise<void>;
  start(): Promise<void>;
}
interface Cluster {
  url: string;
  nodes: ClusterNode[];
  stop(): Promise<void>;
  waitForJetStream(timeoutMs?: number): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const natsCluster = require('../scripts/lib/nats-cluster.js') as {
  startNatsCluster(o: object): Promise<Cluster>;
};
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { findNatsServer } = require('../scripts/lib/nats-auth.js') as { findNatsServer(): string };

/**
 * NATS_REPLICAS against a real three-node JetStream cluster (three nats-server processes with routes
 * and authentication, as `npm run cluster` starts them): every stream, KV bucket and object store the
 * api creates gets that many copies, raising it on an existing installation copies what is there, and
 * asking for more copies than NATS can keep stops the api with a message that says what to do.
 */
describe('NATS_REPLICAS on a three-node cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ess-replicas-'));
  const admin = { user: 'admin', password: randomBytes(12).toString('hex') };
  const prefix = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
  let cluster: Cluster;
  const started: NatsService[] = [];

  const start = async (env: Record<string, string>): Promise<NatsService> => {
    const svc = new NatsService(loadConfig({ DATA_DIR: dir, NATS_URL: cluster.url, NATS_USER: admin.user, NATS_PASSWORD: admin.password, NATS_PREFIX: prefix, EMITS_MAX_BYTES: String(16 * 1024 * 1024), ...env }), 'replicas-spec');
    started.push(svc);
    await svc.start();
    return svc;
  };
  const replicasOf = async (svc: NatsService): Promise<Record<string, { configured: number; copies: number }>> => {
    const out: Record<string, { configured: number; copies: number }> = {};
    for (const stream of installationStreams(svc.names)) {
      const info = await svc.jsm.streams.info(stream);
      // The servers holding a copy: the leader and its followers.
      out[stream] = { configured: info.config.num_replicas, copies: new Set([info.cluster?.leader, ...(info.cluster?.replicas ?? []).map((r) => r.name)].filter(Boolean)).size };
    }
    return out;
  };
  const all = (svc: NatsService, n: number): Record<string, { configured: number; copies: number }> =>
    Object.fromEntries(installationStreams(svc.names).map((s) => [s, { configured: n, copies: n }]));

  beforeAll(async () => {
    const nodes = [];
    for (const name of ['n1', 'n2', 'n3']) nodes.push({ name, host: '127.0.0.1', port: await freePort(), clusterHost: '127.0.0.1', clusterPort: await freePort() });
    cluster = await natsCluster.startNatsCluster({ bin: findNatsServer(), dir, nodes, installations: [], admin });
  });

  afterAll(async () => {
    for (const s of started) await s.stop().catch(() => undefined);
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates every stream, bucket and object store with one copy by default, and raises them to three keeping their data', async () => {
    // A bucket an earlier version created with the client's defaults: any copy may answer its reads.
    const early = await connect({ servers: cluster.url.split(','), user: admin.user, pass: admin.password });
    await early.jetstream({ timeout: 20_000 }).views.kv(new Names(prefix).sourcesBucket, { history: 1 });
    expect((await (await early.jetstreamManager()).streams.info(`KV_${new Names(prefix).sourcesBucket}`)).config.allow_direct).toBe(true);
    await early.close();

    const one = await start({});
    expect(await replicasOf(one)).toEqual(all(one, 1));
    // Reads go through each bucket's leader: a lagging copy never answers with an old value or "not found".
    for (const b of [one.names.sourcesBucket, one.names.sourceStateBucket, one.names.leasesBucket]) expect((await one.jsm.streams.info(`KV_${b}`)).config.allow_direct).toBe(false);
    await one.sources.put('0.dc_kept', new TextEncoder().encode('desired'));
    await one.components.putBlob({ name: 'code-kept' }, new TextEncoder().encode('module.exports = {}'));
    await one.js.publish(one.names.emit('dc_kept'), new TextEncoder().encode('{"e":1}'));
    await one.stop();

    const three = await start({ NATS_REPLICAS: '3' });
    expect(await replicasOf(three)).toEqual(all(three, 3));
    expect(new TextDecoder().decode((await three.sources.get('0.dc_kept'))?.value)).toBe('desired');
    expect(new TextDecoder().decode((await three.components.getBlob('code-kept')) ?? undefined)).toBe('module.exports = {}');
    expect((await three.jsm.streams.info(three.names.emitsStream)).state.messages).toBe(1);
  });

  it('keeps serving with one node of three killed (the apps\' reads and writes go on)', async () => {
    const svc = await start({ NATS_REPLICAS: '3' });
    const node = cluster.nodes[2];
    await node.kill('SIGKILL');
    try {
      // A KV write needs a quorum of the bucket's copies (two of three): once the survivors have a leader
      // for the bucket (an election when the killed node led it) the write is acknowledged.
      await eventually(() => svc.sources.put('0.dc_during', new TextEncoder().encode('written with a node down')), { timeoutMs: 30_000, what: 'a KV write with one node down' });
      const read = await eventually(() => svc.sources.get('0.dc_during'), { timeoutMs: 30_000, what: 'a KV read with one node down' });
      expect(new TextDecoder().decode(read.value)).toBe('written with a node down');
    } finally {
      await node.start();
      await cluster.waitForJetStream();
    }
  });

  it('sends a publish again when its server died before acknowledging it: stored once, acknowledged', async () => {
    const adminNc = await connect({ servers: cluster.url.split(','), user: admin.user, pass: admin.password });
    const stream = `${prefix}_RESEND`;
    try {
      const jsm = await adminNc.jetstreamManager({ timeout: 20_000 });
      await jsm.streams.add({ name: stream, subjects: [`${prefix}.resend.>`], num_replicas: 3 });
      const leader = (await jsm.streams.info(stream)).cluster?.leader;
      const node = cluster.nodes.find((n) => n.name !== leader) as ClusterNode & { url: string; pid: number };
      // The publisher's connection is on a node that does not lead the stream; the others are learnt from the cluster.
      const nc = await connect({ servers: node.url, user: admin.user, pass: admin.password, reconnectTimeWait: 200, maxReconnectAttempts: -1 });
      const publisher = new StreamPublisher(nc, 30_000);
      try {
        // Frozen, the node takes the publish into its socket and never forwards it; killed, it loses it.
        process.kill(node.pid, 'SIGSTOP');
        const acked = publisher.publish(`${prefix}.resend.a`, new TextEncoder().encode('once'), 'resend-1');
        await new Promise((r) => setTimeout(r, 300));
        await node.kill('SIGKILL');
        await acked;
        // Read once the cluster answers again (the admin connection may have been on the killed node too).
        const info = await eventually(() => jsm.streams.info(stream), { timeoutMs: 60_000, what: 'the stream info' });
        expect(info.state.messages).toBe(1);
      } finally {
        publisher.close();
        await nc.close();
        await node.start();
        await cluster.waitForJetStream();
      }
    } finally {
      await adminNc.close();
    }
  });

  it('stops the api with a message naming NATS_REPLICAS when the cluster has fewer servers than copies asked', async () => {
    await expect(start({ NATS_REPLICAS: '5' })).rejects.toThrow(/NATS_REPLICAS=5: NATS cannot keep 5 copies of stream \S+ \(.+\)\. Run a NATS cluster with at least 5 JetStream servers up .*or set NATS_REPLICAS/);
  });

  it('stops the api with that message against a single server (not clustered)', async () => {
    const own = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`;
    const svc = new NatsService(loadConfig({ DATA_DIR: dir, ...natsAdminEnv(), NATS_PREFIX: own, NATS_REPLICAS: '3' }), 'replicas-spec');
    started.push(svc);
    await expect(svc.start()).rejects.toThrow(/NATS_REPLICAS=3: NATS cannot keep 3 copies of stream \S+INVOCATIONS \(.+\)\. Run a NATS cluster/);
  });
});
