import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { TIMER_MAX_INTERVAL_SECONDS } from '@app/contracts';
import { parseAddressRule } from './address-rule';
import { parseTrustProxy, TrustProxy } from './trust-proxy';

/**
 * The one place that reads the environment. Every setting is declared once with
 * its type, default and bounds; a wrong value stops the app with a message naming
 * the variable.
 */
type Kind = 'int' | 'string' | 'url' | 'bool';
interface Setting<K extends Kind> {
  env: string;
  kind: K;
  default?: K extends 'int' ? number : K extends 'bool' ? boolean : string;
  min?: number;
  max?: number;
  /** Why `max` is the bound, shown after it when a value is over it. */
  maxWhy?: string;
  doc: string;
}

/** The longest delay a Node.js timer holds: a longer one fires after 1 ms (a timeout at once, an interval in a busy loop). */
export const MAX_DURATION_MS = 2_147_483_647;
const DURATION_WHY = '(about 24.8 days, the longest delay a timer holds)';

const int = (env: string, def: number, doc: string, min = 0, max = Number.MAX_SAFE_INTEGER): Setting<'int'> => ({ env, kind: 'int', default: def, min, max, doc });
/** A duration in milliseconds: every one ends up in a timer (or Postgres's statement_timeout, which has the same bound). */
const ms = (env: string, def: number, doc: string, min = 0): Setting<'int'> => ({ ...int(env, def, doc, min, MAX_DURATION_MS), maxWhy: DURATION_WHY });
const str = (env: string, def: string | undefined, doc: string): Setting<'string'> => ({ env, kind: 'string', default: def, doc });
const url = (env: string, def: string | undefined, doc: string): Setting<'url'> => ({ env, kind: 'url', default: def, doc });
const bool = (env: string, def: boolean, doc: string): Setting<'bool'> => ({ env, kind: 'bool', default: def, doc });

export const SETTINGS = {
  port: int('PORT', 3000, 'HTTP port of the api', 1, 65535),
  host: str('HOST', '0.0.0.0', 'address the api listens on'),
  publicUrl: url('PUBLIC_URL', undefined, 'external base URL of the api, without a query or fragment (default http://localhost:$PORT)'),
  trustProxy: str('TRUST_PROXY', '', 'proxies in front of the api whose X-Forwarded-For says who the client is (client_ip of HTTP source events; the lane of /v1 requests without a key): empty or false = none, the client is the connection\'s address (a client writes X-Forwarded-For itself); true = every hop (only when every request comes through proxies that overwrite the header); a number = that many proxies in front of the api; a comma-separated list of addresses and CIDRs (127.0.0.1,10.0.0.0/8; loopback, linklocal, uniquelocal) = those'),
  databaseUrl: url('DATABASE_URL', undefined, 'Postgres connection URL (npm start resolves one when unset)'),
  dbPoolMax: int('DB_POOL_MAX', 10, 'Postgres connections one api or delivery process keeps open at most', 1, 1000),
  dbPoolAcquireTimeoutMs: ms('DB_POOL_ACQUIRE_TIMEOUT_MS', 5_000, 'how long a query of the api waits for a free Postgres connection before its request is answered 503 with Retry-After', 100),
  dbStatementTimeoutMs: ms('DB_STATEMENT_TIMEOUT_MS', 30_000, 'Postgres statement_timeout of the api\'s connections: a statement running longer is cancelled and its request answered 503 (0 = none)', 0),
  apiMaxConcurrentPerKey: int('API_MAX_CONCURRENT_PER_KEY', 8, '/v1 requests with one API key that an api replica works on at once; more wait for their turn (0 = no limit), so one account cannot take every Postgres connection; requests without a key count per client address (the connection\'s, or the client a proxy named in TRUST_PROXY forwarded for; never an X-Forwarded-For a client wrote), so one client cannot take another\'s turns', 0, 10_000),
  apiQueueWaitMs: ms('API_QUEUE_WAIT_MS', 10_000, 'how long a /v1 request over API_MAX_CONCURRENT_PER_KEY waits for its turn before it is answered 429 with Retry-After', 0),
  natsUrl: str('NATS_URL', 'nats://127.0.0.1:4222', 'NATS server(s), comma separated'),
  natsUser: str('NATS_USER', '', 'NATS user name of this app (with NATS_PASSWORD or NATS_PASSWORD_FILE); npm start and npm test generate one per app'),
  natsPassword: str('NATS_PASSWORD', undefined, 'password of NATS_USER (never logged)'),
  natsPasswordFile: str('NATS_PASSWORD_FILE', '', 'file holding the password of NATS_USER, instead of NATS_PASSWORD (docker compose reads it from the generated credentials)'),
  natsToken: str('NATS_TOKEN', undefined, 'NATS token authentication, instead of a user and password (never logged)'),
  natsCreds: str('NATS_CREDS', '', 'path of a NATS .creds file (JWT and NKey seed, for servers in operator mode), instead of a user and password'),
  natsInboxPrefix: str('NATS_INBOX_PREFIX', '_INBOX', 'subject prefix of this app\'s reply subjects; with per-app NATS permissions each app gets its own (_INBOX_<user>), so no app can read another\'s replies'),
  natsPrefix: str('NATS_PREFIX', '', 'prefix for every stream, bucket and subject (isolates installations sharing a NATS server)'),
  natsReplicas: int('NATS_REPLICAS', 1, 'copies JetStream keeps of every stream, KV bucket and object store the api creates: 1 for a single NATS server, 3 for a three-node cluster (the api raises or lowers existing ones at its start)', 1, 5),
  dataDir: str('DATA_DIR', './.data', 'local state: embedded Postgres, npm cache, generated secrets key, the id its database is claimed by (database-claim)'),
  secretsKey: str('SECRETS_KEY', undefined, '32-byte key (hex or base64) encrypting secret props, webhook secrets and webhook urls; generated into DATA_DIR when unset'),
  logLevel: str('LOG_LEVEL', 'info', 'log level: fatal, error, warn, info, debug, trace or silent'),
  partitions: int('PARTITIONS', 32, 'number of source partitions (fixed for the life of an installation)', 1, 4096),
  leaseTtlMs: ms('LEASE_TTL_MS', 10_000, 'partition lease time-to-live', 1000),
  runTimeoutMs: ms('RUN_TIMEOUT_MS', 300_000, 'default wall-clock limit of one run or hook', 100),
  maxRunTimeoutMs: ms('MAX_RUN_TIMEOUT_MS', 300_000, 'operator cap of a per-source run timeout (raised to RUN_TIMEOUT_MS when only that is set higher)', 100),
  workerHeapMb: int('WORKER_HEAP_MB', 256, 'old-generation heap cap per worker thread, or of an account\'s whole sandbox process with SANDBOX_RUN_IN=process', 16),
  workerVmTimeout: str('WORKER_VM_TIMEOUT', 'adaptive', 'how a synchronous endless loop in component code is stopped: always (vm timeout on every call, ~50 µs each), adaptive (vm timeout only for code that already hung its thread; its first hang terminates the worker, or with SANDBOX_RUN_IN=process stops the account\'s sandbox process), never (terminate the worker or stop the process every time)'),
  workerThreads: int('WORKER_THREADS', 0, 'Piscina pool size (0 = number of CPUs)', 0, 256),
  sandboxIsolation: str('SANDBOX_ISOLATION', 'namespaces', 'how component code is isolated: namespaces (one sandbox process per account under bubblewrap: no network but the egress proxy, an unprivileged uid, Node\'s permission model, a memory limit) or none (worker threads of the app process, for a single trusted team)'),
  sandboxRunIn: str('SANDBOX_RUN_IN', 'process', 'where an account\'s runs execute inside its sandbox process: process (its own thread, several runs in flight at once; a run that blocks the thread past its deadline stops the process, and the account\'s runs in flight beside it are run again, one at a time, to find the culprit) or workers (SANDBOX_THREADS_PER_ACCOUNT worker threads: a blocked run stops only its worker, at a higher cost per run)'),
  sandboxThreadsPerAccount: int('SANDBOX_THREADS_PER_ACCOUNT', 2, 'with SANDBOX_RUN_IN=workers, worker threads in one account\'s sandbox process: how many runs of one account execute at once (more wait in that account\'s queue)', 1, 64),
  sandboxMemoryMb: int('SANDBOX_MEMORY_MB', 1024, 'resident memory (RSS, heap and off-heap) one account\'s sandbox process may use before it is stopped, each file in its /tmp counting 1 KiB', 64),
  sandboxNice: int('SANDBOX_NICE', 10, 'scheduling priority (nice) of the sandbox processes: component code gets the CPU after the platform\'s own processes (api, runner, delivery, NATS, Postgres) when the machine is busy, and cannot raise it back (0 = the apps\' own priority)', 0, 19),
  sandboxTmpMb: int('SANDBOX_TMP_MB', 256, 'size of the /tmp of one account\'s sandbox (its own tmpfs, emptied when the sandbox stops): the only place component code can write files', 1, 1_048_576),
  sandboxIdleMs: ms('SANDBOX_IDLE_MS', 300_000, 'a sandbox process with nothing to run for this long is stopped', 1000),
  sandboxMemoryTotalMb: int('SANDBOX_MEMORY_TOTAL_MB', 0, "memory every sandbox of one app may use together (its processes' resident memory and its /tmp, a tmpfs); past it the largest is stopped (its runs fail with MemoryLimitError), so that accounts each within SANDBOX_MEMORY_MB cannot together take the machine's memory from Postgres, NATS and the apps (0 = half of the machine's memory)", 0),
  sandboxMaxProcesses: int('SANDBOX_MAX_PROCESSES', 64, 'sandbox processes one app keeps at once; beyond it the least recently used idle one is stopped', 1, 10_000),
  sandboxUidBase: int('SANDBOX_UID_BASE', 200_000, 'first uid of the 100,000 the sandboxes run as when the app runs as root (one per account, derived from its id)', 1000, 2_000_000_000),
  sandboxEgressAllow: str('SANDBOX_EGRESS_ALLOW', '', 'comma-separated ip, cidr, ip:port or cidr:port that component code may connect to whatever ALLOW_LOOPBACK / ALLOW_PRIVATE_ADDRESSES say'),
  sandboxEgressDeny: str('SANDBOX_EGRESS_DENY', '', 'comma-separated ip, cidr, ip:port or cidr:port component code may never connect to (added to the platform\'s own: NATS, Postgres, the apps\' ops ports API_METRICS_PORT, RUNNER_METRICS_PORT and DELIVERY_METRICS_PORT)'),
  sandboxEgressMaxConnections: int('SANDBOX_EGRESS_MAX_CONNECTIONS', 256, 'outbound connections one account\'s sandbox may have open (or be opening) at once through the app\'s egress proxy; more are refused (ECONNREFUSED)', 1, 100_000),
  sandboxEgressBytesPerSecond: int('SANDBOX_EGRESS_BYTES_PER_SECOND', 8 * 1024 * 1024, 'bytes one account\'s sandbox moves through the app\'s egress proxy per second, both ways and all its connections together, after a burst of ten seconds\' worth; past it its connections wait (every byte is copied on the thread of the app that runs the sandbox: 0 = no bound)'),
  sandboxEgressConnectsPerSecond: int('SANDBOX_EGRESS_CONNECTS_PER_SECOND', 100, 'connections one account\'s sandbox may ask the app\'s egress proxy for per second, allowed or refused, after a burst of ten seconds\' worth; past it its next ones fail at once with ECONNREFUSED naming this setting, for that account only (each request is looked up, judged and answered on the thread of the app that runs the sandbox: 0 = no bound)'),
  sandboxEgressRefusedPerSecond: int('SANDBOX_EGRESS_REFUSED_PER_SECOND', 10, 'of those, the ones the proxy refuses itself (an address the policy refuses, a name with no address, a malformed request), after a burst of ten seconds\' worth; past it the account\'s next connections fail at once with ECONNREFUSED naming this setting (a loop of refused connections asked for 6,000 a second: 0 = no bound)'),
  sandboxEgressLookupsAtOnce: int('SANDBOX_EGRESS_LOOKUPS_AT_ONCE', 8, 'lookups by name one account\'s sandbox may have the app\'s egress proxy make at once (two DNS queries each, A and AAAA; answers are kept for their TTL, at most 30 s); more fail at once with EAI_AGAIN naming this setting, so that one account\'s names whose DNS server never answers do not hold the app\'s resolver for the others', 1, 1000),
  dbMaxBytes: int('DB_MAX_BYTES', 1024 * 1024, '$.service.db size cap per source', 1024),
  eventMaxBytes: int('EVENT_MAX_BYTES', 512 * 1024, 'largest emitted event', 1024),
  subscriptionChainMaxRuns: int('SUBSCRIPTION_CHAIN_MAX_RUNS', 10_000, 'runs of sources and workflows that one event from outside (an HTTP request, a timer slot, a manual run) may lead to through subscriptions of subscriptions (the runs its own emits start do not count); past it each listener records one $errors event and runs no more of that chain (counted per delivery replica)', 1),
  subscriptionMaxDepth: int('SUBSCRIPTION_MAX_DEPTH', 16, 'subscriptions in a row an event may pass through: a source or workflow that would run on an event which came from outside through more (a subscription loop) is not run and records an $errors event instead', 1, 1000),
  propsMaxBytes: int('PROPS_MAX_BYTES', 64 * 1024, 'largest value of one configured prop (a string\'s UTF-8 bytes, else its JSON bytes): the spec\'s 64KB static prop value; over it → `413`', 1024),
  propsDocumentMaxBytes: int('PROPS_DOCUMENT_MAX_BYTES', 512 * 1024, 'largest `configured_props` document, all values together (JSON bytes; it travels in one NATS message of the desired state); over it → `413`', 1024),
  sourcesMaxPerAccount: int('SOURCES_MAX_PER_ACCOUNT', 1000, 'sources one account (a user or an org) may have at once; one more → 403 quota_exceeded (0 = no quota)', 0),
  workflowsMaxPerAccount: int('WORKFLOWS_MAX_PER_ACCOUNT', 1000, 'workflows one account may have at once; one more → 403 quota_exceeded (0 = no quota)', 0),
  webhooksMaxPerAccount: int('WEBHOOKS_MAX_PER_ACCOUNT', 1000, 'webhooks one account may have at once; one more → 403 quota_exceeded (0 = no quota)', 0),
  subscriptionsMaxPerAccount: int('SUBSCRIPTIONS_MAX_PER_ACCOUNT', 10_000, 'subscriptions and auto-subscriptions one account may have at once, those a new source or workflow gets from auto-subscriptions included (a create they would take past it is refused); one more → 403 quota_exceeded (0 = no quota)', 0),
  componentMaxBytes: int('COMPONENT_MAX_BYTES', 5 * 1024 * 1024, 'largest component code', 1024),
  npmInstallsPerDayPerAccount: int('NPM_INSTALLS_PER_DAY_PER_ACCOUNT', 50, 'npm dependency sets not yet on this machine that one account\'s component saves may install in 24 hours, per api replica (each runs npm and keeps its packages on disk; sets already installed are free); over it a save answers 429 with Retry-After (0 = no bound)', 0),
  npmInstallMaxMb: int('NPM_INSTALL_MAX_MB', 1024, 'largest npm dependency set of a component on disk (all its packages, unpacked); npm is stopped once a set passes it and the save answers 400 (a package anyone can publish may unpack to gigabytes on the disk NATS and the other accounts use)', 1),
  componentBytesPerDayPerAccount: int('COMPONENT_BYTES_PER_DAY_PER_ACCOUNT', 256 * 1024 * 1024, 'bytes of component code (and bundles, and what is read from the code: description, props) one account may save in 24 hours, by POST /components, sources deployed from code or a URL, and workflow steps, each save counting at least 16 KiB; over it a save answers 429 with Retry-After (at least twice COMPONENT_MAX_BYTES; 0 = no bound)', 0),
  componentReadTimeoutMs: ms('COMPONENT_READ_TIMEOUT_MS', 60_000, 'wall-clock limit of reading a component (bundling, installing its npm imports, loading) or calling a prop\'s options()', 100),
  componentUrlTimeoutMs: ms('COMPONENT_URL_TIMEOUT_MS', 10_000, 'timeout of each fetch of a component_url file', 100),
  registryDir: str('REGISTRY_DIR', '', 'directory of the shipped registry components the api publishes in the background at start (default: registry/components of the install; "off" disables)'),
  componentGcIntervalMs: ms('COMPONENT_GC_INTERVAL_MS', 3_600_000, 'how often one api replica removes component code that no source uses from the object store (0 disables)', 0),
  componentGcGraceMs: ms('COMPONENT_GC_GRACE_MS', 3_600_000, 'component code stored or re-used by a publish within this time is never removed', 1000),
  reconcileIntervalMs: ms('RECONCILE_INTERVAL_MS', 5_000, 'how often the api republishes sources whose desired state lags Postgres', 100),
  emitsPerInvocation: int('EMITS_PER_INVOCATION', 10_000, 'emits allowed in one invocation', 1),
  emitsBytesPerSecondPerAccount: int('EMITS_BYTES_PER_SECOND_PER_ACCOUNT', 2 * 1024 * 1024, "bytes of events (as stored in EMITS) and $.send.sse messages one account's sources and workflows publish per second from one runner, after a burst of ten seconds' worth (at least EVENT_MAX_BYTES); over it publishing waits as for EMITS_PER_SECOND_PER_ACCOUNT; below what one delivery replica indexes, so that one account's large events do not hold every other account's (0 = no bound)", 0),
  emitsPerSecondPerAccount: int('EMITS_PER_SECOND_PER_ACCOUNT', 1000, "events (all channels, $logs and $errors included) and $.send.sse messages one account's sources and workflows publish per second from one runner, after a burst of ten seconds' worth (at least EMITS_PER_INVOCATION); over it publishing waits, nothing is dropped, the runner reads no more of the account's sandbox answers meanwhile (they wait in its sandbox), and the account's backlog (then its endpoints' 429s) grows instead of every account's delivery delay (0 = no bound)", 0),
  endpointDomain: str('ENDPOINT_DOMAIN', '', 'domain of host-based HTTP source endpoints: <endpoint_key>.<domain> (a wildcard DNS name pointing at the api); endpoint URLs then use it (empty = <PUBLIC_URL>/e/<endpoint_key> only)'),
  httpMaxBodyBytes: int('HTTP_MAX_BODY_BYTES', 512 * 1024, 'largest request body to an HTTP source endpoint', 1024),
  httpBodyBytesInFlight: int('HTTP_BODY_BYTES_IN_FLIGHT', 128 * 1024 * 1024, "bytes of request bodies to HTTP source endpoints an api replica receives at once (each request counts its Content-Length, a chunked one HTTP_MAX_BODY_BYTES, until it is answered; one client address, not a proxy TRUST_PROXY names, at most a quarter of it); a request past either is answered 503 with Retry-After: 1, its body unread, so clients holding large bodies open cannot fill the api's memory (0 = no bound)", 0),
  ingressFastPath: bool('INGRESS_FAST_PATH', true, 'serve the common request to an HTTP source endpoint (a POST, PUT or PATCH with a Content-Length body to a known endpoint without a custom response) without the web framework: the same answers for 16–26 % less of the api\'s CPU per request (false = every request through the framework\'s route)'),
  httpRatePerSec: int('HTTP_RATE_PER_SEC', 10, 'average requests per second per HTTP source endpoint (0 = unlimited)', 0),
  ingestMaxPendingPerSource: int('INGEST_MAX_PENDING_PER_SOURCE', 1000, "invocations of one source waiting in INVOCATIONS above which its HTTP endpoint answers 429 with Retry-After (0 = no bound)", 0),
  ingestMaxPending: int('INGEST_MAX_PENDING', 5_000, "invocations waiting in INVOCATIONS plus emitted events the delivery app has not yet routed, above which every HTTP endpoint answers 429 with Retry-After; each account's part counts up to INGEST_MAX_PENDING_PER_ACCOUNT, and an account whose own unrouted events reach this bound is refused alone; several accounts at their own bound together can reach it (3 × 2,000), so size it for as many as may be stuck at once (0 = no bound)", 0),
  ingestMaxPendingPerAccount: int('INGEST_MAX_PENDING_PER_ACCOUNT', 2_000, "invocations of one account's sources and workflows waiting in INVOCATIONS above which that account's HTTP endpoints answer 429 with Retry-After; an account's invocations count in INGEST_MAX_PENDING up to this bound only, so one account's backlog never refuses another's requests; the delivery app starts no runs of the account's listening sources and workflows from subscriptions past it (0 = no bound)", 0),
  ingestMaxPendingDeliveriesPerAccount: int('INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT', 2_000, "deliveries to one account's webhooks waiting in DELIVERIES (routed, not yet sent), above which the HTTP endpoints of that account's sources answer 429 with Retry-After; other accounts are not held back (0 = no bound)", 0),
  ingestMaxRetriesPerAccount: int('INGEST_MAX_RETRIES_PER_ACCOUNT', 100_000, "deliveries to one account's webhooks waiting in webhook_retries for their next attempt (failed, or handed back), above which the HTTP endpoints of that account's sources answer 429 with Retry-After, as read every WEBHOOK_RETRIES_COUNT_MS: failing webhooks fill the shared Postgres at the rate their deliveries fail, and each retry waits up to about a day. Other accounts are not held back; disabling or deleting the failing webhooks drops their retries and lets the account in again (0 = no bound)", 0),
  webhookRetriesCountMs: int('WEBHOOK_RETRIES_COUNT_MS', 5_000, "how often each api and delivery replica counts the waiting webhook retries per account, for INGEST_MAX_RETRIES_PER_ACCOUNT and WEBHOOK_MAX_RETRIES_PER_ACCOUNT; while webhook_retries holds fewer rows than the bound a count stops there, past it the count reads the whole table (about 0.8 s of Postgres time per million rows) and the next one waits at least 20 times as long as the last took", 100, 600_000),
  webhookMaxRetriesPerAccount: int('WEBHOOK_MAX_RETRIES_PER_ACCOUNT', 200_000, "deliveries to one account's webhooks waiting in webhook_retries past which a failed attempt of that account's webhooks is not retried: it is recorded exhausted (GET /webhooks/{id}/deliveries says why). The account's HTTP endpoints are refused before, at INGEST_MAX_RETRIES_PER_ACCOUNT; this bound holds what they do not refuse (timers, subscriptions, runs in progress) so one account's failing webhooks cannot fill the shared Postgres: keep it above INGEST_MAX_RETRIES_PER_ACCOUNT (0 = no bound)", 0),
  ingestBacklogPollMs: int('INGEST_BACKLOG_POLL_MS', 250, 'how often each api replica reads the INVOCATIONS backlog for back-pressure', 50, 10_000),
  httpBurst: int('HTTP_BURST', 50, 'burst allowance per HTTP source endpoint', 1),
  httpResponseTimeoutMs: ms('HTTP_RESPONSE_TIMEOUT_MS', 30_000, 'how long a customResponse endpoint waits for respond()', 100),
  httpRequestTimeoutMs: ms('HTTP_REQUEST_TIMEOUT_MS', 60_000, "how long a client has to send a whole request (headers and body) to the api before its connection is closed (408), so connections that never finish their request cannot hold the api's file descriptors; streams and held responses are not affected (0 = no limit)", 0),
  httpMaxConnectionsPerAddress: int('HTTP_MAX_CONNECTIONS_PER_ADDRESS', 1_024, "connections one client address may hold open to an api replica at once; past it a new connection is answered 503 with Retry-After and closed. Proxies TRUST_PROXY names are not bounded (their clients are many) (0 = no bound)", 0),
  httpMaxConnections: int('HTTP_MAX_CONNECTIONS', 0, "connections an api replica holds open at once, from all clients; past it a new connection is closed at once, so its own connections to Postgres, NATS and its sandboxes keep file descriptors (0 = the process's open-file limit less 1,024, where it can be read)", 0),
  timerMinIntervalSeconds: { ...int('TIMER_MIN_INTERVAL_SECONDS', 15, "smallest intervalSeconds a timer may use (a component's own default under it is raised to it)", 1, TIMER_MAX_INTERVAL_SECONDS), maxWhy: '(366 days, the longest intervalSeconds a timer takes)' },
  indexAsyncCommit: bool('INDEX_ASYNC_COMMIT', true, 'commit event summaries without waiting for Postgres to flush them to disk (synchronous_commit off for these inserts only): an event is still indexed, and visible, before any listener gets it, and its delivery no longer waits out the disk\'s slow flushes; a Postgres crash can lose the last moments of these commits, which every delivery app re-indexes from EMITS once it sees Postgres started again (false = each index batch waits for its flush)'),
  deliveryLogAsyncCommit: bool('DELIVERY_LOG_ASYNC_COMMIT', true, "commit the rows of successful webhook attempts (GET /webhooks/{id}/deliveries; written in batches of up to 50 ms after the message is acknowledged) without waiting for Postgres to flush them to disk: a Postgres crash can lose the rows of its last moments, not the deliveries (failed, exhausted and disabled attempts always wait for their flush: retries depend on them; false = successes wait for theirs too)"),
  webhookDeliveriesRetention: int('WEBHOOK_DELIVERIES_RETENTION', 1000, 'attempt rows (GET /webhooks/{id}/deliveries) kept per webhook, the newest; older ones are deleted every 10 minutes, as are rows older than EMITS_MAX_AGE_SECONDS (0 = no count bound)', 0),
  eventRetention: int('EVENT_RETENTION', 100, 'event summaries kept per source and channel class (the delivery apps trim to it, the api lists at most it: give them the same value)', 1),
  summaryTruncateBytes: int('SUMMARY_TRUNCATE_BYTES', 1024, 'event data above this is truncated in summaries unless expand=event', 64),
  emitsMaxAgeSeconds: { ...int('EMITS_MAX_AGE_SECONDS', 7 * 24 * 3600, 'how long the EMITS stream keeps events', 60, 9_223_372_036), maxWhy: '(about 292 years: NATS holds the age in nanoseconds)' },
  emitsMaxBytes: int('EMITS_MAX_BYTES', 1024 * 1024 * 1024, "size cap of the EMITS stream, reserved from the NATS server's JetStream storage at start; the oldest events go first above it (0 = no cap)", 0),
  sseMaxStreamsPerKey: int('SSE_MAX_STREAMS_PER_KEY', 64, 'event streams (SSE) one user\'s API key may have open at once on one api replica; more answer 429 (0: no limit). Each holds a socket of the api, a JetStream consumer and a Postgres query per SSE_KEEPALIVE_MS', 0),
  sseKeepaliveMs: ms('SSE_KEEPALIVE_MS', 15_000, 'interval of the :sse-handshake comment that keeps SSE streams alive', 100),
  webhookTimeoutMs: ms('WEBHOOK_TIMEOUT_MS', 15_000, 'per-attempt webhook timeout', 100),
  webhookConcurrency: int('WEBHOOK_CONCURRENCY', 64, 'requests to one webhook in flight at once per delivery replica (a webhook\'s throughput is at most this many requests per round trip of its endpoint; a slow or hung endpoint holds at most this many connections)', 1, 1024),
  webhookFailingInFlightPerAccount: int('WEBHOOK_FAILING_IN_FLIGHT_PER_ACCOUNT', 64, "attempts in flight at once per delivery replica at one account's failing webhooks together (a webhook is failing while its last attempt failed), each held until its attempt row and retry are written: many fast-failing webhooks of one account take a bounded part of the replica and other accounts' deliveries do not wait behind their failures; the account's other attempts wait their turn, webhook by webhook (one failing webhook alone keeps WEBHOOK_CONCURRENCY at the defaults)", 1, 100_000),
  webhookLookupsAtOnce: int('WEBHOOK_LOOKUPS_AT_ONCE_PER_ACCOUNT', 8, "lookups by name of one account's webhook hosts a delivery replica makes at once (two DNS queries each, A and AAAA, up to 2.5 s each, tried twice; a name's answer is kept for its TTL, at most 30 s, and a kept-alive connection needs none); past it the account's next connections wait for one of its own lookups to end, within their attempt's WEBHOOK_TIMEOUT_MS (an attempt that times out waiting is retried on the schedule), so one account's many webhooks on names whose DNS servers answer slowly or never do not hold the resolver for the others", 1, 1000),
  webhookHeldPerAccount: int('WEBHOOK_HELD_PER_ACCOUNT', 7_500, "DELIVERIES messages of one account's webhooks a delivery replica holds unacknowledged at once (waiting for a request slot or in flight); past it the account's next messages are handed back to come again in 5-15 s (parked in webhook_retries and acknowledged, so they leave WEBHOOK_MAX_ACK_PENDING), so one account's hung or failing receivers never fill the consumer and stop every other account's queued deliveries: keep replicas × this × the accounts that may be stuck at once well under WEBHOOK_MAX_ACK_PENDING. Events a replica routes straight to a healthy webhook do not count", 1, 1_000_000),
  webhookRetrySchedule: str('WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,10h', 'delays between webhook attempts (ms, s, m, h or d; each at most 24d)'),
  webhookMaxAckPending: int('WEBHOOK_MAX_ACK_PENDING', 50_000, 'webhook messages the delivery apps hold unacknowledged at once (waiting retries are kept in Postgres, not here)', 1),
  deliveryAckWaitMs: ms('DELIVERY_ACK_WAIT_MS', 30_000, 'how long a crashed delivery replica holds unacknowledged messages before another one gets them (work in progress is kept alive)', 1000),
  allowPrivateAddresses: bool('ALLOW_PRIVATE_ADDRESSES', false, 'allow outbound connections (webhooks, component_url, component code through the sandbox egress) to private ranges'),
  allowLoopback: bool('ALLOW_LOOPBACK', false, 'allow outbound connections (webhooks, component_url, component code through the sandbox egress) to loopback addresses, and the platform\'s own requests (webhooks, $.send.http, component_url) to this machine\'s interface addresses (npm start enables it; the platform\'s own services stay refused to component code and to the platform\'s own requests)'),
  runnerReplicaId: str('RUNNER_REPLICA_ID', '', 'name of a runner replica in leases and logs (default: <hostname>-<pid>-<random>)'),
  invocationAckWaitMs: ms('INVOCATION_ACK_WAIT_MS', 30_000, 'how long an unacknowledged invocation stays with a replica before JetStream redelivers it (in-flight runs are kept alive with heartbeats)', 1000),
  emitBatches: bool('EMIT_BATCHES', true, "store the events of the requests the api stored together (one INVOCATIONS message) as one EMITS message per sandbox task instead of one per event, each a re-run cannot store twice: about a tenth less CPU per event from a busy source (false = one message per event; every delivery and api replica of this version reads both, so turn it on only once none older runs)"),
  runBatchMaxInvocations: int('RUN_BATCH_MAX_INVOCATIONS', 64, "invocations waiting in one source's mailbox that run as one sandbox task (still one at a time and in order; 1 = one task per invocation)", 1, 1000),
  runBatchAcrossSources: bool('RUN_BATCH_ACROSS_SOURCES', true, "runs of different sources of one account running the same code that are ready at the same moment (the invocations of one fetch from a partition) go to the account's sandbox as one task, up to RUN_BATCH_MAX_INVOCATIONS invocations: each source's invocations still one at a time and in order with their own db, dedupe, errors and respond(), the sources side by side; a task that fails as a whole runs each source's part again on its own (false = one task per source)"),
  runnerMaxInflightPerPartition: int('RUNNER_MAX_INFLIGHT_PER_PARTITION', 2000, "messages of one partition a runner holds in memory at once (a message is an invocation, or up to 32 requests to one source that the api stored together); an account or a source holding a quarter of them takes no more while less than a quarter is free (its next invocations are handed back to JetStream and offered again later, in order), so one account\'s slow runs and backlog never hold up the partition\'s other accounts", 1, 100_000),
  apiMetricsPort: int('API_METRICS_PORT', 0, "api /healthz and /metrics port for operators: the public /metrics figures plus the process's own (memory, CPU, event loop, GC), which the public port does not serve (0 disables)", 0, 65535),
  runnerMetricsPort: int('RUNNER_METRICS_PORT', 9464, 'runner /healthz and /metrics port (0 disables)', 0, 65535),
  deliveryMetricsPort: int('DELIVERY_METRICS_PORT', 9465, 'delivery /healthz and /metrics port (0 disables)', 0, 65535),
  freeDailyInvocationsQuota: int('FREE_DAILY_INVOCATIONS_QUOTA', 10_000, 'daily invocations reported for free accounts', 0),
  freeDailyComputeMsQuota: int('FREE_DAILY_COMPUTE_MS_QUOTA', 1_800_000, 'daily compute time (ms) reported for free accounts', 0),
  npmRegistry: url('NPM_REGISTRY', undefined, 'npm registry for component dependencies (default: npm\'s own setting)'),
  smtpUrl: str('SMTP_URL', '', 'SMTP server workflows\' $.send.email goes through: smtp://[user:password@]host[:port], or smtps://… for implicit TLS (empty: $.send.email fails the step; the password is never logged)'),
  smtpFrom: str('SMTP_FROM', 'workflows@localhost', 'sender address of $.send.email'),
  s3Endpoint: url('S3_ENDPOINT', '', 'S3-compatible endpoint workflows\' $.send.s3 writes to, path-style (http(s)://host[:port]; empty: $.send.s3 fails the step)'),
  s3Region: str('S3_REGION', 'us-east-1', 'region used to sign $.send.s3 requests'),
  s3AccessKeyId: str('S3_ACCESS_KEY_ID', '', 'access key id of $.send.s3'),
  s3SecretAccessKey: str('S3_SECRET_ACCESS_KEY', '', 'secret access key of $.send.s3 (never logged)'),
  sendTimeoutMs: ms('SEND_TIMEOUT_MS', 15_000, 'per-attempt timeout of a workflow send ($.send.http, email, s3); failed attempts are retried on WEBHOOK_RETRY_SCHEDULE', 100),
  sendsInFlightPerAccount: int('SENDS_IN_FLIGHT_PER_ACCOUNT', 8, "workflow sends ($.send.http, email, s3) of one account a delivery replica performs at once, of its 32; the account's next ones wait in Postgres (due again in 5-15 s) meanwhile, so one account's slow or silent receivers never hold every other account's sends", 1, 32),
} as const;

type SettingValue<S> = S extends Setting<'int'> ? number : S extends Setting<'bool'> ? boolean : string;
type Raw = { [K in keyof typeof SETTINGS]: SettingValue<(typeof SETTINGS)[K]> };

export interface AppConfig extends Omit<Raw, 'publicUrl' | 'databaseUrl' | 'secretsKey' | 'npmRegistry' | 'natsPassword' | 'natsToken' | 'trustProxy'> {
  /** NATS_PASSWORD, or the content of NATS_PASSWORD_FILE. */
  natsPassword: string | undefined;
  natsToken: string | undefined;
  publicUrl: string;
  databaseUrl: string | undefined;
  npmRegistry: string | undefined;
  secretsKey: Buffer;
  webhookRetryDelaysMs: number[];
  npmCacheDir: string;
  trustProxy: TrustProxy;
}

export class ConfigError extends Error {}

function parseOne(name: string, s: Setting<Kind>, raw: string | undefined): unknown {
  if (raw === undefined || raw === '') return s.default;
  switch (s.kind) {
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${s.env} must be an integer, got "${raw}"`);
      const n = Number(raw);
      if (s.min !== undefined && n < s.min) throw new ConfigError(`${s.env} must be at least ${s.min}, got ${n}`);
      if (s.max !== undefined && n > s.max) throw new ConfigError(`${s.env} must be at most ${s.max}${s.maxWhy ? ` ${s.maxWhy}` : ''}, got ${raw.trim()}`);
      return n;
    }
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new ConfigError(`${s.env} must be true or false, got "${raw}"`);
    case 'url':
      try {
        new URL(raw);
      } catch {
        throw new ConfigError(`${s.env} must be a URL, got "${raw}"`);
      }
      return raw;
    default:
      void name;
      return raw;
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses "5s,5m,2h" into milliseconds. */
export function parseDurations(env: string, text: string): number[] {
  return text.split(',').map((part) => {
    const m = /^\s*(\d+)(ms|s|m|h|d)\s*$/.exec(part);
    if (!m) throw new ConfigError(`${env} must be a comma-separated list like 5s,5m,2h; bad entry "${part}"`);
    const delay = Number(m[1]) * UNITS[m[2]];
    if (delay > MAX_DURATION_MS) throw new ConfigError(`${env} entries must be at most ${MAX_DURATION_MS} ms ${DURATION_WHY}; bad entry "${part.trim()}"`);
    return delay;
  });
}

function loadSecretsKey(raw: string | undefined, dataDir: string): Buffer {
  const decode = (text: string, from: string): Buffer => {
    const t = text.trim();
    const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
    if (key.length !== 32) throw new ConfigError(`${from} must hold 32 bytes as 64 hex characters or base64`);
    return key;
  };
  if (raw) return decode(raw, 'SECRETS_KEY');
  const file = join(dataDir, 'secrets.key');
  // A DATA_DIR that is not a writable directory (a file, a read-only or foreign volume) once ended `npm run migrate` with a stack trace.
  const unusable = (e: unknown, what: string): ConfigError =>
    new ConfigError(`DATA_DIR ${dataDir}: ${what}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message} (set DATA_DIR to a writable directory, or SECRETS_KEY)`);
  const existing = (): string | undefined => {
    try {
      return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    } catch (e) {
      throw unusable(e, `${file} cannot be read`);
    }
  };
  const text = existing();
  if (text !== undefined) return decode(text, file);
  // Written whole under a name of its own, then linked into place: apps started at the same instant on a fresh
  // DATA_DIR all end with the key the first link put there (one that lost the race reads it), and none reads a
  // file half written.
  const key = randomBytes(32);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(tmp, key.toString('hex') + '\n', { mode: 0o600 });
  } catch (e) {
    throw unusable(e, 'the generated secrets key cannot be written there');
  }
  /** Whether `write` created the file (false: another app's was there first). */
  const created = (write: () => void): boolean => {
    try {
      write();
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
  };
  let placed: boolean;
  try {
    placed = created(() => linkSync(tmp, file));
  } catch {
    // A volume without hard links: created exclusively in place instead.
    try {
      placed = created(() => writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' }));
    } catch (e) {
      throw unusable(e, 'the generated secrets key cannot be written there');
    }
  } finally {
    rmSync(tmp, { force: true });
  }
  return placed ? key : decode(existing()!, file);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const NATS_SCHEMES = ['nats:', 'tls:', 'ws:', 'wss:'];

/** Rules beyond a setting's type: allowed words, URL schemes, name characters. */
function checkValues(raw: Raw): void {
  const oneOf = (env: string, value: string, allowed: string[]): void => {
    if (!allowed.includes(value)) throw new ConfigError(`${env} must be ${allowed.slice(0, -1).join(', ')} or ${allowed[allowed.length - 1]}, got "${value}"`);
  };
  oneOf('WORKER_VM_TIMEOUT', raw.workerVmTimeout, ['always', 'adaptive', 'never']);
  oneOf('LOG_LEVEL', raw.logLevel, LOG_LEVELS);
  oneOf('SANDBOX_ISOLATION', raw.sandboxIsolation, ['namespaces', 'none']);
  oneOf('SANDBOX_RUN_IN', raw.sandboxRunIn, ['process', 'workers']);
  const scheme = (env: string, value: string, allowed: string[]): void => {
    if (!allowed.includes(new URL(value).protocol)) throw new ConfigError(`${env} must be a ${allowed.map((p) => p + '//').join(' or ')} URL, got "${value}"`);
  };
  if (raw.publicUrl) scheme('PUBLIC_URL', raw.publicUrl, ['http:', 'https:']);
  // Endpoint URLs are PUBLIC_URL + /e/<key>: after a query or fragment they pointed nowhere (https://x/?a=1/e/en_…).
  if (/[?#]/.test(raw.publicUrl ?? '')) throw new ConfigError(`PUBLIC_URL must be a base URL without a query or fragment, got "${raw.publicUrl}"`);
  if (raw.databaseUrl) scheme('DATABASE_URL', raw.databaseUrl, ['postgres:', 'postgresql:']);
  if (raw.npmRegistry) scheme('NPM_REGISTRY', raw.npmRegistry, ['http:', 'https:']);
  // The schemes the mailer (parseSmtpUrl) and the S3 signer (path-style over HTTP) accept.
  if (raw.smtpUrl) checkSmtpUrl(raw.smtpUrl);
  if (raw.s3Endpoint) scheme('S3_ENDPOINT', raw.s3Endpoint, ['http:', 'https:']);
  checkAddressRules('SANDBOX_EGRESS_ALLOW', raw.sandboxEgressAllow);
  checkAddressRules('SANDBOX_EGRESS_DENY', raw.sandboxEgressDeny);
  for (const server of raw.natsUrl.split(',').map((s) => s.trim())) {
    // The client accepts host:port without a scheme.
    let u: URL | undefined;
    try {
      u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `nats://${server}`);
    } catch {
      u = undefined;
    }
    if (!server || !u || !NATS_SCHEMES.includes(u.protocol) || !u.hostname) {
      throw new ConfigError(`NATS_URL must be a comma-separated list of nats://host:port (or tls://, ws://, wss://) servers, got "${urlForDisplay(raw.natsUrl)}"`);
    }
  }
  if (raw.endpointDomain && !/^(?=.{1,200}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(raw.endpointDomain)) {
    throw new ConfigError(`ENDPOINT_DOMAIN must be a domain name such as events.example.com (no scheme, port or path), got "${raw.endpointDomain}"`);
  }
  checkNatsAuth(raw);
  if (raw.natsPrefix && !/^[A-Za-z0-9_-]+$/.test(raw.natsPrefix)) throw new ConfigError(`NATS_PREFIX may hold letters, digits, _ and - only, got "${raw.natsPrefix}"`);
}

/** Entries of SANDBOX_EGRESS_ALLOW or SANDBOX_EGRESS_DENY: checked here so a wrong one stops every app as any other wrong value does. */
function checkAddressRules(env: string, text: string): void {
  for (const entry of text.split(',').map((e) => e.trim()).filter(Boolean)) {
    try {
      parseAddressRule(entry);
    } catch {
      throw new ConfigError(`${env} must be a comma-separated list of ip, cidr, ip:port or cidr:port (IPv6 in brackets before a port: [::1]:5432), got "${entry}"`);
    }
  }
}

/** The forms the mailer (parseSmtpUrl) reads; a wrong one is shown without its password. */
function checkSmtpUrl(value: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'smtp:' && protocol !== 'smtps:') throw new ConfigError(`SMTP_URL must be a smtp:// or smtps:// URL, got "${urlForDisplay(value)}"`);
}

/** One way to authenticate to NATS at a time, each complete. */
function checkNatsAuth(raw: Raw): void {
  const password = Boolean(raw.natsPassword) || Boolean(raw.natsPasswordFile);
  if (raw.natsPassword && raw.natsPasswordFile) throw new ConfigError('NATS_PASSWORD and NATS_PASSWORD_FILE are both set: set one of them');
  if (raw.natsUser && !password) throw new ConfigError('NATS_USER is set without NATS_PASSWORD (or NATS_PASSWORD_FILE)');
  if (password && !raw.natsUser) throw new ConfigError('NATS_PASSWORD is set without NATS_USER');
  const ways = [raw.natsUser && 'NATS_USER', raw.natsToken && 'NATS_TOKEN', raw.natsCreds && 'NATS_CREDS'].filter(Boolean);
  if (ways.length > 1) throw new ConfigError(`${ways.join(' and ')} are both set: NATS takes one way to authenticate (a user and password, a token, or a .creds file)`);
  if (!/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/.test(raw.natsInboxPrefix)) throw new ConfigError(`NATS_INBOX_PREFIX must be a subject of letters, digits, _, $ and - tokens separated by dots, got "${raw.natsInboxPrefix}"`);
}

function readNatsPassword(raw: Raw): string | undefined {
  if (!raw.natsPasswordFile) return raw.natsPassword || undefined;
  try {
    const text = readFileSync(raw.natsPasswordFile, 'utf8').replace(/\r?\n$/, '');
    if (!text) throw new ConfigError(`NATS_PASSWORD_FILE ${raw.natsPasswordFile} is empty`);
    return text;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`NATS_PASSWORD_FILE ${raw.natsPasswordFile} cannot be read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** A URL (or a comma-separated list of them: NATS_URL) as it may be shown: the user and password of scheme://user:pass@host are masked. */
export function urlForDisplay(url: string): string {
  return url.replace(/(^|,|\/\/)\s*([^@,/\s]+)@/g, (_m, lead: string) => `${lead}***@`);
}

function readTrustProxy(text: string): TrustProxy {
  try {
    return parseTrustProxy(text);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

/** The operator's cap follows a larger default run timeout unless it is set too; both set and contradictory is an error. */
function runTimeoutCapMs(raw: Raw, env: NodeJS.ProcessEnv): number {
  if (raw.runTimeoutMs <= raw.maxRunTimeoutMs) return raw.maxRunTimeoutMs;
  if (!env.MAX_RUN_TIMEOUT_MS) return raw.runTimeoutMs;
  throw new ConfigError(`RUN_TIMEOUT_MS (${raw.runTimeoutMs}) must not exceed MAX_RUN_TIMEOUT_MS (${raw.maxRunTimeoutMs}), the operator's cap of a run timeout`);
}

/** Reads and validates the whole configuration from an environment (process.env by default). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const out: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(SETTINGS)) {
    out[name] = parseOne(name, s as Setting<Kind>, env[s.env]);
  }
  const raw = out as Raw;
  checkValues(raw);
  const dataDir = resolve(raw.dataDir);
  return {
    ...raw,
    dataDir,
    maxRunTimeoutMs: runTimeoutCapMs(raw, env),
    endpointDomain: raw.endpointDomain.toLowerCase(),
    publicUrl: (raw.publicUrl || `http://localhost:${raw.port}`).replace(/\/+$/, ''),
    databaseUrl: raw.databaseUrl || undefined,
    npmRegistry: raw.npmRegistry || undefined,
    natsPassword: readNatsPassword(raw),
    natsToken: raw.natsToken || undefined,
    secretsKey: loadSecretsKey(env.SECRETS_KEY, dataDir),
    webhookRetryDelaysMs: parseDurations('WEBHOOK_RETRY_SCHEDULE', raw.webhookRetrySchedule),
    npmCacheDir: join(dataDir, 'npm'),
    trustProxy: readTrustProxy(raw.trustProxy),
  };
}

/** Loads the config or exits the process with the message naming the variable. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): AppConfig {
  try {
    return loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`configuration error: ${e.message}\n`);
      process.exit(78);
    }
    throw e;
  }
}
