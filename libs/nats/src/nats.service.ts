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
import { AppConfig, natsUrlForDisplay } from '@app/config';
import { Names } from '@app/contracts';
import { installationStreams } from './nats-permissions';
import { StreamPublisher } from './stream-publisher';
import { coalesceNatsWrites } from './write-coalescing';

const nanos = (ms: number): number => ms * 1_000_000;

/**
 * One NATS connection per process, as the app's own NATS user, with every
 * stream, bucket and object store from the architecture created idempotently
 * on start (by the api; the other apps wait for them).
 */
export class NatsService {
  readonly names: Names;
  nc!: NatsConnection;
  js!: JetStreamClient;
  jsm!: JetStreamManager;
  sources!: KV;
  sourceState!: KV;
  leases!: KV;
  components!: ObjectStore;
  /**
   * Publishes to a stream and waits for its acknowledgement through one reply
   * subscription of this connection (cheaper than `js.publish` per message).
   */
  streams!: StreamPublisher;
  private stopping = false;

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
    try {
      this.nc = await connect(natsConnectionOptions(this.config, this.clientName));
    } catch (e) {
      throw new Error(`cannot connect to NATS at ${natsUrlForDisplay(this.config.natsUrl)} (NATS_URL${natsAuthSettings(this.config)}): ${(e as Error).message}`);
    }
    // The client gives up only when the server keeps refusing the credentials (e.g. rotated passwords after a reload).
    void this.nc.closed().then((err) => {
      if (!this.stopping) this.opts.onConnectionLost?.(err ?? new Error('the NATS connection closed'));
    });
    this.jsm = await this.nc.jetstreamManager();
    this.js = this.nc.jetstream();
    this.streams = new StreamPublisher(this.nc, 5_000, this.config.natsInboxPrefix);
    if (this.opts.manageStreams) await ensureStreams(this.jsm, this.names, this.config);
    else await this.waitForStreams();
    this.sources = await this.js.views.kv(this.names.sourcesBucket, { history: 1 });
    this.sourceState = await this.js.views.kv(this.names.sourceStateBucket, { history: 1 });
    this.leases = await this.js.views.kv(this.names.leasesBucket, { history: 1, ttl: this.config.leaseTtlMs });
    if (this.opts.manageStreams) await this.followLeaseTtl();
    this.components = await this.js.views.os(this.names.componentsStore);
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
          if (!/stream not found/i.test((e as Error).message)) throw e;
          missing.push(stream);
        }
      }
      if (!missing.length) return;
      if (Date.now() > deadline) throw new Error(`NATS streams ${missing.join(', ')} do not exist after ${waitMs} ms: the api creates them at its start (same NATS_URL and NATS_PREFIX); start the api`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Binding to an existing bucket keeps its TTL: a changed LEASE_TTL_MS is applied to the bucket's stream. */
  private async followLeaseTtl(): Promise<void> {
    const stream = `KV_${this.names.leasesBucket}`;
    const info = await this.jsm.streams.info(stream);
    const maxAge = nanos(this.config.leaseTtlMs);
    // As the client sets it on create: the duplicate window may not exceed the age.
    if (info.config.max_age !== maxAge) await this.jsm.streams.update(stream, { ...info.config, max_age: maxAge, duplicate_window: Math.min(maxAge, nanos(120_000)) });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.nc && !this.nc.isClosed()) await this.nc.drain();
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

async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  try {
    const info = await jsm.streams.info(config.name);
    await jsm.streams.update(config.name, { ...info.config, ...config });
  } catch (e) {
    if (!/stream not found/i.test((e as Error).message)) throw e;
    await jsm.streams.add(config);
  }
}

export async function ensureStreams(jsm: JetStreamManager, names: Names, config: AppConfig): Promise<void> {
  await ensureStream(jsm, {
    name: names.invocationsStream,
    subjects: [names.allInvocations],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(120_000),
  });
  await ensureStream(jsm, {
    name: names.emitsStream,
    subjects: [names.allEmits],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(config.emitsMaxAgeSeconds * 1000),
    max_bytes: config.emitsMaxBytes > 0 ? config.emitsMaxBytes : -1,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(120_000),
  }).catch((e: Error) => {
    // JetStream reserves a stream's max_bytes from the server's storage up front.
    if (/insufficient storage/i.test(e.message)) {
      throw new Error(`NATS cannot reserve EMITS_MAX_BYTES=${config.emitsMaxBytes} bytes for the ${names.emitsStream} stream (insufficient storage resources): lower EMITS_MAX_BYTES, or give the NATS server more JetStream storage (max_file_store)`);
    }
    throw e;
  });
  await ensureStream(jsm, {
    name: names.deliveriesStream,
    subjects: [names.allDeliveries],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(120_000),
  });
  await ensureStream(jsm, {
    name: names.usageStream,
    subjects: [names.allUsage],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    max_age: nanos(3 * 86_400_000),
    duplicate_window: nanos(120_000),
  });
}
