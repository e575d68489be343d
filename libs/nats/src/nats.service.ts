import { readFileSync } from 'node:fs';
import {
  Authenticator,
  ConnectionOptions,
  connect,
  credsAuthenticator,
  DiscardPolicy,
  JetStreamClient,
  JetStreamManager,
  KV,
  NatsConnection,
  ObjectStore,
  RetentionPolicy,
  StorageType,
  StreamConfig,
} from 'nats';
import { AppConfig, urlForDisplay } from '@app/config';
import { encodeJson, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { installationStreams, kvStream, objStream } from './nats-permissions';
import { StreamPublisher } from './stream-publisher';
import { coalesceNatsWrites } from './write-coalescing';
import { ConnectionState, natsUnavailableError } from './nats-errors';

const nanos = (ms: number): number => ms * 1_000_000;
/** JetStream API requests that create or change streams: a replicated stream's creation waits for its leader election. */
const STREAM_ADMIN_TIMEOUT_MS = 10_000;
/** The apps' JetStream API requests (consumers, stream info, purges). */
const CONSUMER_ADMIN_TIMEOUT_MS = 15_000;
/** How long a request that needs NATS waits for a dropped connection to come back before it is refused. */
const RECONNECT_GRACE_MS = 1_000;

/**
 * The app's NATS connection, as its own NATS user, with every stream, bucket and
 * object store from the architecture created idempotently on start (by the api;
 * the other apps wait for them), and a second connection for the `leases` bucket alone.
 */
export class NatsService {
  readonly names: Names;
  nc!: NatsConnection;
  js!: JetStreamClient;
  jsm!: JetStreamManager;
  sources!: KV;
  sourceState!: KV;
  /**
   * On a connection of its own (`leaseNc`): a renewal never waits behind the main connection's
   * bulk traffic (a burst of publishes queued in its buffer), so a busy replica keeps its partitions.
   */
  leases!: KV;
  leaseNc!: NatsConnection;
  components!: ObjectStore;
  /**
   * Publishes to a stream and waits for its acknowledgement through one reply
   * subscription of this connection (cheaper than `js.publish` per message).
   */
  streams!: StreamPublisher;
  private stopping = false;
  private connection?: ConnectionState;

  /**
   * `manageStreams`: this process creates and updates every stream and bucket
   * (the api; with per-app NATS permissions only its user may). Without it the
   * process waits for them to exist and only binds to them. `onConnectionLost`:
   * the connection closed for good while the process was not stopping it.
   */
  constructor(
    private readonly config: AppConfig,
    private readonly clientName: string,
    private readonly opts: { manageStreams: boolean; streamsWaitMs?: number; onConnectionLost?: (err: Error) => void } = { manageStreams: true },
  ) {
    this.names = new Names(config.natsPrefix);
  }

  async start(): Promise<void> {
    coalesceNatsWrites();
    this.nc = await connectFirst(this.config, this.clientName);
    this.connection = new ConnectionState(this.nc);
    this.leaseNc = await connect(leaseConnectionOptions(this.config, this.clientName, this.nc.getServer()));
    // The client gives up only when the server keeps refusing the credentials (e.g. rotated passwords after a reload).
    for (const nc of [this.nc, this.leaseNc]) {
      void nc.closed().then((err) => {
        if (!this.stopping) this.opts.onConnectionLost?.(err ?? new Error('the NATS connection closed'));
      });
    }
    // Creating a durable consumer on a cluster waits for its leader election: longer than the client's 5 s default.
    this.jsm = await retryUnanswered('reaching JetStream', () => this.nc.jetstreamManager({ timeout: CONSUMER_ADMIN_TIMEOUT_MS }));
    this.js = this.nc.jetstream();
    this.streams = new StreamPublisher(this.nc, 5_000, this.config.natsInboxPrefix);
    const replicas = this.config.natsReplicas;
    if (this.opts.manageStreams) await this.createStreams();
    else await this.waitForStreams();
    // Reads through the bucket's leader (allow_direct off: see ensureNoDirectReads).
    const allow_direct = false;
    this.sources = await retryUnanswered('binding bucket sources', () => this.js.views.kv(this.names.sourcesBucket, { history: 1, replicas, allow_direct }));
    this.sourceState = await retryUnanswered('binding bucket source-state', () => this.js.views.kv(this.names.sourceStateBucket, { history: 1, replicas, allow_direct }));
    const leaseJs = this.leaseNc.jetstream();
    this.leases = await retryUnanswered('binding bucket leases', () => leaseJs.views.kv(this.names.leasesBucket, { history: 1, ttl: this.config.leaseTtlMs, replicas, allow_direct }));
    this.components = await retryUnanswered('binding object store components', () => this.js.views.os(this.names.componentsStore, { replicas }));
  }

  /**
   * Creates (or updates) every stream, bucket and object store. On a cluster, creating a replicated
   * stream waits for its first leader election (seconds): these requests get a longer timeout than the
   * apps' everyday ones, and the buckets are then bound with the everyday client.
   */
  private async createStreams(): Promise<void> {
    const jsm = await retryUnanswered('reaching JetStream', () => this.nc.jetstreamManager({ timeout: STREAM_ADMIN_TIMEOUT_MS }));
    await ensureStreams(jsm, this.names, this.config);
    const replicas = this.config.natsReplicas;
    const slow = this.nc.jetstream({ timeout: STREAM_ADMIN_TIMEOUT_MS });
    const allow_direct = false;
    for (const bucket of [this.names.sourcesBucket, this.names.sourceStateBucket]) await retryUnanswered(`creating bucket ${bucket}`, () => slow.views.kv(bucket, { history: 1, replicas, allow_direct }));
    await retryUnanswered(`creating bucket ${this.names.leasesBucket}`, () => slow.views.kv(this.names.leasesBucket, { history: 1, ttl: this.config.leaseTtlMs, replicas, allow_direct }));
    await retryUnanswered(`creating object store ${this.names.componentsStore}`, () => slow.views.os(this.names.componentsStore, { replicas }));
    await this.followLeaseTtl(jsm);
    // Binding to an existing bucket keeps its settings: reads from the leader and a changed NATS_REPLICAS are applied to their streams.
    for (const stream of [kvStream(this.names.sourcesBucket), kvStream(this.names.sourceStateBucket), kvStream(this.names.leasesBucket)]) {
      await ensureNoDirectReads(jsm, stream);
      await ensureReplicas(jsm, stream, replicas);
    }
    await ensureReplicas(jsm, objStream(this.names.componentsStore), replicas);
  }

  /** Streams and buckets are the api's to create: runner and delivery may start first and wait for them. */
  private async waitForStreams(): Promise<void> {
    const waitMs = this.opts.streamsWaitMs ?? 120_000;
    const deadline = Date.now() + waitMs;
    const wanted = installationStreams(this.names);
    for (;;) {
      const missing: string[] = [];
      for (const stream of wanted) {
        try {
          await this.jsm.streams.info(stream);
        } catch (e) {
          // TIMEOUT, 503: a cluster still electing its leaders.
          if (!/stream not found|TIMEOUT|503/i.test((e as Error).message)) throw e;
          missing.push(stream);
        }
      }
      if (!missing.length) return;
      if (Date.now() > deadline) throw new Error(`NATS streams ${missing.join(', ')} do not exist after ${waitMs} ms: the api creates them at its start (same NATS_URL and NATS_PREFIX); start the api`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Binding to an existing bucket keeps its TTL: a changed LEASE_TTL_MS is applied to the bucket's stream. */
  private async followLeaseTtl(jsm: JetStreamManager): Promise<void> {
    const stream = `KV_${this.names.leasesBucket}`;
    await retryUnanswered(`following LEASE_TTL_MS in stream ${stream}`, async () => {
      const info = await jsm.streams.info(stream);
      const maxAge = nanos(this.config.leaseTtlMs);
      // As the client sets it on create: the duplicate window may not exceed the age.
      if (info.config.max_age !== maxAge) await jsm.streams.update(stream, { ...info.config, max_age: maxAge, duplicate_window: Math.min(maxAge, nanos(120_000)) });
    });
  }

  /** The largest message the connected server takes (its `max_payload`; NATS's default, 1 MiB, before it said). */
  get maxPayload(): number {
    return this.nc.info?.max_payload ?? 1024 * 1024;
  }

  /** Reconnections of this process's connection so far (see ConnectionState.reconnects). */
  get reconnects(): number {
    return this.connection?.reconnects ?? 0;
  }

  /**
   * Whether the connection is up, waiting up to RECONNECT_GRACE_MS for a reconnection when it is down
   * (another node of a cluster takes over within milliseconds; a restarting server takes seconds).
   */
  async waitConnected(): Promise<boolean> {
    if (this.nc?.isClosed()) return false;
    return this.connection ? this.connection.whenConnected(RECONNECT_GRACE_MS) : true;
  }

  /** Whether the connection is up now (waitConnected without the wait, for a hot path to skip it). */
  get connectedNow(): boolean {
    return !this.nc?.isClosed() && (this.connection?.connected ?? true);
  }

  /**
   * Refuses a request that needs NATS (503 with Retry-After) while the connection is down and does not
   * come back within RECONNECT_GRACE_MS: a publish would wait in the client's buffer until its timeout,
   * and could still be sent after the caller was told it failed.
   */
  async ensureConnected(): Promise<void> {
    if (!(await this.waitConnected())) throw natsUnavailableError();
  }

  /** Publishes an invocation to its source's (or workflow's) mailbox, stored once per invocation id; 503 while NATS is away. */
  async publishInvocation(msg: InvocationMessage): Promise<void> {
    await this.ensureConnected();
    await this.js.publish(this.names.invocation(partitionOf(msg.sourceId, this.config.partitions), msg.sourceId), encodeJson(msg), { msgID: msg.invocationId });
  }

  /**
   * Removes the invocations still waiting for a deleted source or workflow: they would only be acknowledged as
   * unknown, one by one, by the runner of its partition, and every other source of that partition would wait behind them.
   */
  async purgeInvocations(sourceId: string): Promise<number> {
    const { purged } = await this.jsm.streams.purge(this.names.invocationsStream, { filter: this.names.invocation(partitionOf(sourceId, this.config.partitions), sourceId) });
    return purged;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.nc && !this.nc.isClosed()) await this.nc.drain();
    if (this.leaseNc && !this.leaseNc.isClosed()) await this.leaseNc.drain();
    this.streams?.close();
  }
}

/** The client options of an app's connection: servers, its credentials, its own reply subjects. */
export function natsConnectionOptions(config: AppConfig, name: string): ConnectionOptions {
  const options: ConnectionOptions = {
    servers: config.natsUrl.split(',').map((s) => s.trim()),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // A server that stops answering without closing the connection (a network partition, a frozen
    // host) is given up after 3 unanswered pings 5 s apart, and the client moves to another server of
    // NATS_URL (the client's default: 2 pings 2 minutes apart).
    pingInterval: 5_000,
    maxPingOut: 3,
    // No stack capture per request: a measurable cost on the hot publish/ack paths.
    noAsyncTraces: true,
    inboxPrefix: config.natsInboxPrefix,
  };
  if (config.natsUser) {
    options.user = config.natsUser;
    options.pass = config.natsPassword;
  }
  if (config.natsToken) options.token = config.natsToken;
  if (config.natsCreds) options.authenticator = credsFile(config.natsCreds);
  return options;
}

/**
 * The lease connection's options: the main connection's server first and no shuffling, so both
 * connections see the same node of a cluster (a replica cut off from its main connection's node
 * must not keep renewing its leases through another).
 */
export function leaseConnectionOptions(config: AppConfig, name: string, mainServer: string): ConnectionOptions {
  const options = natsConnectionOptions(config, `${name}.leases`);
  const servers = options.servers as string[];
  const same = servers.filter((s) => s.replace(/^[a-z]+:\/\//i, '') === mainServer);
  return { ...options, servers: [...same, ...servers.filter((s) => !same.includes(s))], noRandomize: true };
}

function credsFile(path: string): Authenticator {
  try {
    return credsAuthenticator(readFileSync(path));
  } catch (e) {
    throw new Error(`NATS_CREDS ${path} cannot be read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** Which auth settings a connection error may be about (never their values). */
function natsAuthSettings(config: AppConfig): string {
  if (config.natsUser) return `, NATS_USER=${config.natsUser} with ${config.natsPasswordFile ? 'NATS_PASSWORD_FILE' : 'NATS_PASSWORD'}`;
  if (config.natsToken) return ', NATS_TOKEN';
  if (config.natsCreds) return `, NATS_CREDS=${config.natsCreds}`;
  return ', no NATS_USER: an unauthenticated connection';
}

/**
 * What the server answers when it cannot keep `replicas` copies of a stream: a single server
 * (not clustered), or a cluster with fewer JetStream servers up than replicas.
 */
const CANNOT_REPLICATE = /non-clustered|no suitable peers|insufficient resources|peer|replicas/i;

/** A failed create or update of `stream`, explained when it is about its replicas. */
function replicasError(e: Error, stream: string, replicas: number): Error {
  if (replicas <= 1 || !CANNOT_REPLICATE.test(e.message)) return e;
  return new Error(
    `NATS_REPLICAS=${replicas}: NATS cannot keep ${replicas} copies of stream ${stream} (${e.message}). ` +
      `Run a NATS cluster with at least ${replicas} JetStream servers up (docs/operations.md, "Running a cluster"), or set NATS_REPLICAS to what your NATS has (1 for a single server) and restart the api.`,
  );
}

/**
 * Runs a JetStream admin request again when its answer does not come in time, or when JetStream has
 * no responder for a moment (`503`: a server reloading its config or electing a leader): with several
 * api replicas creating the same replicated stream at once, nats-server 2.9 may never answer one of
 * them although the stream gets created; the next try finds it and updates it. After the last of `attempts`
 * tries it throws an error naming `what` (for the start-up's log), or with `rethrow` the last try's error
 * itself (a request that needs NATS answers that 503, where a plain error answers 500).
 */
export async function retryUnanswered<T>(what: string, fn: () => Promise<T>, { attempts = 6, rethrow = false } = {}): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      const message = (e as Error).message;
      const unavailable = message === '503' || (e as { code?: string }).code === '503';
      if (!(/TIMEOUT/.test(message) || unavailable) || i >= attempts) throw i > 1 && !rethrow ? new Error(`${what}: no answer from NATS after ${i} tries (${message})`) : e;
      // A timeout has waited already; "no responders" answers at once.
      if (unavailable) await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  await retryUnanswered(`creating or updating stream ${config.name}`, () => ensureStreamOnce(jsm, config));
}

async function ensureStreamOnce(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  let info;
  try {
    info = await jsm.streams.info(config.name);
  } catch (e) {
    if (!/stream not found/i.test((e as Error).message)) throw e;
    await jsm.streams.add(config).catch((err: Error) => {
      throw replicasError(err, config.name, config.num_replicas ?? 1);
    });
    return;
  }
  await jsm.streams.update(config.name, { ...info.config, ...config }).catch((err: Error) => {
    throw replicasError(err, config.name, config.num_replicas ?? 1);
  });
  if (config.num_replicas && (info.config.num_replicas || 1) !== config.num_replicas) await waitForCopies(jsm, config.name, config.num_replicas);
}

/**
 * A KV bucket with `allow_direct` lets any of its copies answer a read, and a copy that lags (a node back
 * from a crash or a partition, still catching up) answers with what it has: an old revision, or "not
 * found" for a key that exists. The runner's state (`source-state`, written with compare-and-set), the
 * desired states and the leases must be read as they are: with `allow_direct` off, every read goes
 * through the bucket's leader. A bucket created with it on (the client's default) is changed.
 */
export async function ensureNoDirectReads(jsm: JetStreamManager, stream: string): Promise<void> {
  await retryUnanswered(`turning off direct reads of stream ${stream}`, async () => {
    const info = await jsm.streams.info(stream);
    if (!info.config.allow_direct) return;
    await jsm.streams.update(stream, { ...info.config, allow_direct: false });
  });
}

/**
 * Sets an existing stream's replicas (a bucket's or object store's: binding to one keeps its own).
 * JetStream copies the stream to the new peers, or drops the extra copies, while it keeps serving.
 */
export async function ensureReplicas(jsm: JetStreamManager, stream: string, replicas: number): Promise<void> {
  if (((await retryUnanswered(`reading stream ${stream}`, () => jsm.streams.info(stream))).config.num_replicas || 1) === replicas) return;
  await retryUnanswered(`changing the replicas of stream ${stream}`, async () => {
    const info = await jsm.streams.info(stream);
    if ((info.config.num_replicas || 1) === replicas) return;
    await jsm.streams.update(stream, { ...info.config, num_replicas: replicas }).catch((err: Error) => {
      throw replicasError(err, stream, replicas);
    });
  });
  await waitForCopies(jsm, stream, replicas);
}

/** Resolves once `stream` has a leader and `replicas - 1` followers that are current (a raise has copied everything). */
async function waitForCopies(jsm: JetStreamManager, stream: string, replicas: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = await jsm.streams.info(stream).catch(() => undefined);
    const followers = info?.cluster?.replicas ?? [];
    if (info?.cluster?.leader && followers.length === replicas - 1 && followers.every((r) => r.current)) return;
    if (replicas === 1 && info && !info.cluster?.replicas?.length) return;
    if (Date.now() > deadline) throw new Error(`NATS_REPLICAS=${replicas}: stream ${stream} did not get ${replicas} current copies within ${timeoutMs / 1000} s (followers: ${JSON.stringify(followers)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function ensureStreams(jsm: JetStreamManager, names: Names, config: AppConfig): Promise<void> {
  // Every stream: file storage, NATS_REPLICAS copies, a 2-minute window in which a republished Nats-Msg-Id is stored once.
  const stream = (name: string, subject: string, rest: Partial<StreamConfig>): Partial<StreamConfig> & { name: string } => ({
    name,
    num_replicas: config.natsReplicas,
    subjects: [subject],
    storage: StorageType.File,
    duplicate_window: nanos(120_000),
    ...rest,
  });
  const workQueue = { retention: RetentionPolicy.Workqueue };
  await ensureStream(jsm, stream(names.invocationsStream, names.allInvocations, workQueue));
  await ensureStream(
    jsm,
    stream(names.emitsStream, names.allEmits, {
      retention: RetentionPolicy.Limits,
      max_age: nanos(config.emitsMaxAgeSeconds * 1000),
      max_bytes: config.emitsMaxBytes > 0 ? config.emitsMaxBytes : -1,
      discard: DiscardPolicy.Old,
    }),
  ).catch((e: Error) => {
    // JetStream reserves a stream's max_bytes from the server's storage up front.
    if (/insufficient storage/i.test(e.message)) {
      throw new Error(`NATS cannot reserve EMITS_MAX_BYTES=${config.emitsMaxBytes} bytes for the ${names.emitsStream} stream (insufficient storage resources): lower EMITS_MAX_BYTES, or give the NATS server more JetStream storage (max_file_store)`);
    }
    throw e;
  });
  await ensureStream(jsm, stream(names.deliveriesStream, names.allDeliveries, workQueue));
  await ensureStream(jsm, stream(names.sendsStream, names.allSends, workQueue));
  await ensureStream(jsm, stream(names.usageStream, names.allUsage, { ...workQueue, max_age: nanos(3 * 86_400_000) }));
}

/** How long a first connection refused for its credentials is tried again: a server reloading its users answers so for a moment. */
const AUTH_RETRY_MS = 10_000;

/**
 * The first connection. Refused credentials are tried again for a few seconds (a
 * nats-server picks up added or rotated users on a config reload, and an app
 * started meanwhile sees a refusal); then, like any other failure, an error
 * that names the settings to check.
 */
async function connectFirst(config: AppConfig, clientName: string): Promise<NatsConnection> {
  const deadline = Date.now() + AUTH_RETRY_MS;
  for (;;) {
    try {
      return await connect(natsConnectionOptions(config, clientName));
    } catch (e) {
      const refused = /authorization violation/i.test((e as Error).message);
      if (!refused || Date.now() >= deadline) {
        throw new Error(`cannot connect to NATS at ${urlForDisplay(config.natsUrl)} (NATS_URL${natsAuthSettings(config)}): ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
