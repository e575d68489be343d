'use strict';
// The scaled-out system on one host, for `npm run cluster` and the fault suite: a three-node NATS
// JetStream cluster (scripts/lib/nats-cluster.js, NATS_REPLICAS=3), Postgres, two api replicas behind
// a round-robin (scripts/lib/round-robin.js), two runner replicas and two delivery replicas. Every app
// runs under the supervisor of `npm start` (restarted when it dies) and connects to all three NATS
// nodes as its own NATS user.
const path = require('node:path');
const { Supervisor } = require('./supervisor');
const { freePortFrom, loadOrCreateCredentials, appEnv, ensureNatsServer } = require('./nats-auth');
const { startNatsCluster } = require('./nats-cluster');
const { startRoundRobin } = require('./round-robin');
const { waitFor } = require('./infra');

const ROOT = path.join(__dirname, '..', '..');
const REPLICAS = { api: 2, runner: 2, delivery: 2 };

async function healthy(url) {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

/** Free ports from `from`, `count` of them, none in `taken`. */
async function ports(from, count, taken) {
  const out = [];
  let p = from;
  while (out.length < count) {
    p = await freePortFrom(p);
    if (!taken.has(p)) {
      out.push(p);
      taken.add(p);
    }
    p++;
  }
  return out;
}

/**
 * Starts the system. Options: `dataDir` (NATS nodes under <dataDir>/nats-cluster), `databaseUrl` (migrated),
 * `port` (the round-robin's; default 3000 or the next free), `base` (first port of the other ranges, default
 * none: well-known ones), `env` (settings for every app), `log`, `output` (the apps' stderr),
 * `appEnv` (`{ 'runner-2': {…} }`: settings of one replica), `natsNodes(ports)` (node specs instead of three
 * on loopback, e.g. one in a network namespace).
 */
async function startClusterSystem({ dataDir, databaseUrl, port, base, env: extraEnv = {}, appEnv: perApp = {}, log, output, natsNodes }) {
  const taken = new Set();
  // With `base`, the ranges move together: base, base+1…, base+100…, base+200…, and so on.
  const OFFSETS = { 3000: 0, 3001: 1, 9464: 100, 9564: 200, 4222: 300, 6222: 400, 8222: 500 };
  const at = (wellKnown) => (base ? base + OFFSETS[wellKnown] : wellKnown);
  const [proxyPort] = await ports(port ?? at(3000), 1, taken);
  const apiPorts = await ports(at(3001), REPLICAS.api, taken);
  const runnerPorts = await ports(at(9464), REPLICAS.runner, taken);
  const deliveryPorts = await ports(at(9564), REPLICAS.delivery, taken);
  const clientPorts = await ports(at(4222), 3, taken);
  const clusterPorts = await ports(at(6222), 3, taken);
  const httpPorts = await ports(at(8222), 3, taken);

  const natsDir = path.join(dataDir, 'nats-cluster');
  const prefix = extraEnv.NATS_PREFIX ?? process.env.NATS_PREFIX ?? '';
  const creds = loadOrCreateCredentials(natsDir, prefix);
  const bin = ensureNatsServer();
  if (!bin) throw new Error('nats-server is not on PATH (apt-get install nats-server, brew install nats-server)');
  const specs = natsNodes
    ? natsNodes({ clientPorts, clusterPorts, httpPorts })
    : clientPorts.map((p, i) => ({ name: `n${i + 1}`, host: '127.0.0.1', port: p, clusterHost: '127.0.0.1', clusterPort: clusterPorts[i], httpPort: httpPorts[i] }));
  const nats = await startNatsCluster({ bin, dir: natsDir, nodes: specs, installations: [{ prefix: creds.prefix, credentials: creds.apps }], admin: creds.admin });
  log(`nats: a cluster of ${specs.length} nats-server nodes (${nats.url}; monitoring ${specs.map((s) => `http://${s.host}:${s.httpPort}`).join(' ')}; under ${natsDir})`);

  const publicUrl = `http://localhost:${proxyPort}`;
  // Component code never reaches the platform: every app port, the NATS routes and monitoring, Postgres.
  const platform = [...apiPorts, proxyPort, ...runnerPorts, ...deliveryPorts].map((p) => `127.0.0.1:${p}`);
  for (const s of specs) platform.push(`${s.clusterHost}:${s.clusterPort}`, ...(s.httpPort ? [`${s.host}:${s.httpPort}`] : []));
  const pgUrl = new URL(databaseUrl);
  platform.push(`127.0.0.1:${pgUrl.port || 5432}`, `[::1]:${pgUrl.port || 5432}`);
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    NATS_URL: nats.url,
    NATS_REPLICAS: '3',
    PUBLIC_URL: publicUrl,
    HOST: '127.0.0.1',
    ALLOW_LOOPBACK: process.env.ALLOW_LOOPBACK || 'true',
    // The apis listen on loopback behind the round-robin there: its X-Forwarded-For names the client.
    TRUST_PROXY: process.env.TRUST_PROXY || '127.0.0.1',
    ...extraEnv,
    SANDBOX_EGRESS_DENY: [process.env.SANDBOX_EGRESS_DENY, extraEnv.SANDBOX_EGRESS_DENY, ...platform].filter(Boolean).join(','),
  };
  if (prefix) env.NATS_PREFIX = prefix;
  const { loadConfigOrExit } = require(path.join(ROOT, 'dist/libs/config/src/config.js'));
  loadConfigOrExit(env);

  const supervisor = new Supervisor({ log, output, stdoutToOutput: Boolean(output) });
  const apps = [];
  const add = (name, app, appSpecificEnv, healthPort) => {
    const url = `http://127.0.0.1:${healthPort}/healthz`;
    const e = { ...env, ...appEnv(creds.apps, app), ...appSpecificEnv, ...(perApp[name] ?? {}) };
    if (app === 'runner') e.DATABASE_URL = '';
    supervisor.add(name, { command: process.execPath, args: [path.join(ROOT, 'dist', 'apps', app, 'main.js')], env: e, healthy: () => healthy(url) });
    apps.push({ name, app, healthUrl: url, port: healthPort });
  };
  // One api first: it creates (or re-replicates) the streams the others wait for (replicas creating the
  // same replicated streams at once only slow each other down).
  add('api-1', 'api', { PORT: String(apiPorts[0]) }, apiPorts[0]);
  await waitFor(() => healthy(apps[0].healthUrl), 120_000, 'api-1 to become healthy');
  apiPorts.slice(1).forEach((p, i) => add(`api-${i + 2}`, 'api', { PORT: String(p) }, p));
  runnerPorts.forEach((p, i) => add(`runner-${i + 1}`, 'runner', { RUNNER_REPLICA_ID: `runner-${i + 1}`, RUNNER_METRICS_PORT: String(p) }, p));
  deliveryPorts.forEach((p, i) => add(`delivery-${i + 1}`, 'delivery', { DELIVERY_METRICS_PORT: String(p) }, p));
  const proxy = await startRoundRobin({ host: '127.0.0.1', port: proxyPort, upstreams: apiPorts.map((p) => ({ host: '127.0.0.1', port: p })) });

  const system = {
    nats,
    supervisor,
    proxy,
    apps,
    env,
    credentials: creds,
    publicUrl,
    baseUrl: `${proxy.url}/v1`,
    origin: proxy.url,
    /** Resolves once every app answers /healthz. */
    async waitHealthy(timeoutMs = 120_000) {
      for (const a of apps) await waitFor(() => healthy(a.healthUrl), timeoutMs, `${a.name} to become healthy`);
    },
    async stop() {
      await proxy.close();
      await supervisor.stop();
      await nats.stop();
    },
  };
  return system;
}

/** The database of the cluster (its own: the cluster's NATS must not share an installation with npm start's). */
const CLUSTER_DB = 'event_source_service_cluster';

module.exports = { startClusterSystem, CLUSTER_DB };
