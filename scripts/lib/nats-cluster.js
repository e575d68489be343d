'use strict';
// A NATS JetStream cluster on one host: `npm run cluster`, the fault suite (`npm run test:faults`) and
// the replica tests start one. Every node has the users and permissions of scripts/lib/nats-auth.js
// (one user per app, plus admin), its own store, config and log under <dir>/<node name>, and routes to
// every other node; routes authenticate with the cluster's own user, so a client user cannot join it.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { natsServerEnv, renderServerConfig, writePrivate } = require('./nats-auth');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The route user of a cluster kept in `<dir>/cluster-route.json` (mode 0600): generated on first use, kept afterwards. */
function loadOrCreateRouteUser(dir) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'cluster-route.json');
  try {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (stored.user && stored.password) return stored;
  } catch {
    // generate below
  }
  const route = { user: 'route', password: randomBytes(24).toString('base64url') };
  writePrivate(file, JSON.stringify(route, null, 2) + '\n');
  return route;
}

async function adminConnect(servers, admin, opts = {}) {
  const { connect } = require('nats');
  return connect({ servers, user: admin.user, pass: admin.password, timeout: 2000, maxReconnectAttempts: 0, ...opts });
}

async function canConnect(url, admin) {
  try {
    const nc = await adminConnect(url, admin);
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * One node of the cluster. `spec`: { name, host, port, clusterHost, clusterPort, httpPort, netns? }
 * (`netns`: run it inside that network namespace, for partitions; its hosts must be reachable from there).
 */
class NatsNode {
  constructor({ bin, dir, spec, peers, installations, admin, route, clusterName }) {
    Object.assign(this, spec);
    this.bin = bin;
    this.admin = admin;
    this.dir = path.join(dir, spec.name);
    this.url = `nats://${spec.host}:${spec.port}`;
    this.configFile = path.join(this.dir, 'nats-server.conf');
    this.logFile = path.join(this.dir, 'nats-server.log');
    this.child = undefined;
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const routes = peers.map((p) => `nats-route://${route.user}:${route.password}@${p.clusterHost}:${p.clusterPort}`);
    writePrivate(
      this.configFile,
      renderServerConfig({
        listen: `${spec.host}:${spec.port}`,
        storeDir: this.dir,
        installations,
        admin,
        httpPort: spec.httpPort ? `${spec.host}:${spec.httpPort}` : undefined,
        serverName: spec.name,
        cluster: { name: clusterName, listen: `${spec.clusterHost}:${spec.clusterPort}`, user: route.user, password: route.password, routes },
      }),
    );
  }

  get pid() {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** Starts the node (again); resolves once admin can connect to it. */
  async start() {
    const args = ['-c', this.configFile, '-l', this.logFile];
    const child = this.netns ? spawn('ip', ['netns', 'exec', this.netns, this.bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: natsServerEnv() }) : spawn(this.bin, args, { stdio: ['ignore', 'ignore', 'pipe'], env: natsServerEnv() });
    this.child = child;
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const deadline = Date.now() + 20_000;
    while (!(await canConnect(this.url, this.admin))) {
      if (child.exitCode !== null) throw new Error(`nats-server ${this.name} exited (${child.exitCode}): ${stderr.trim() || `see ${this.logFile}`}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`timed out waiting for nats-server ${this.name} on ${this.host}:${this.port} (its log: ${this.logFile})`);
      }
      await sleep(100);
    }
  }

  /** Sends `signal` (SIGKILL: a crash) and resolves once the process is gone. */
  async kill(signal = 'SIGKILL') {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => {
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      child.kill(signal);
    });
  }

  stop() {
    return this.kill('SIGTERM');
  }
}

/**
 * Starts a cluster: `nodes` are specs (see NatsNode); `installations` and `admin` as for one server
 * (scripts/lib/nats-auth.js). Resolves once JetStream has a meta leader (streams can be created).
 * Returns `{ nodes, url, admin, stop, leaderOf(stream), waitForJetStream(), settled() }`; `url` lists every node.
 */
async function startNatsCluster({ bin, dir, nodes: specs, installations, admin, route, clusterName = 'ess' }) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const routeUser = route ?? loadOrCreateRouteUser(dir);
  const nodes = specs.map((spec) => new NatsNode({ bin, dir, spec, peers: specs.filter((p) => p !== spec), installations, admin, route: routeUser, clusterName }));
  const url = nodes.map((n) => n.url).join(',');
  const cluster = {
    nodes,
    url,
    admin,
    node: (name) => nodes.find((n) => n.name === name),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
    /** Resolves once the cluster answers JetStream requests (a meta leader is elected). */
    async waitForJetStream(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      let last;
      for (;;) {
        try {
          const nc = await adminConnect(url, admin);
          try {
            const jsm = await nc.jetstreamManager({ timeout: 2000 });
            await jsm.getAccountInfo();
            return;
          } finally {
            await nc.close();
          }
        } catch (e) {
          last = e;
        }
        if (Date.now() > deadline) throw new Error(`the NATS cluster has no JetStream meta leader after ${timeoutMs} ms: ${last?.message} (logs: ${nodes.map((n) => n.logFile).join(', ')})`);
        await sleep(250);
      }
    },
    /**
     * Waits until every stream (KV buckets and object stores included) has a leader and all its replicas are
     * current; resolves with the streams still unsettled when `timeoutMs` ran out (empty when all settled).
     */
    async settled(timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const unsettled = await unsettledStreams(url, admin).catch((e) => [`(no answer: ${e.message})`]);
        if (!unsettled.length || Date.now() >= deadline) return unsettled;
        await sleep(500);
      }
    },
    /** Name of the node that leads `stream` (undefined while it has no leader). */
    async leaderOf(stream) {
      const nc = await adminConnect(url, admin);
      try {
        const jsm = await nc.jetstreamManager({ timeout: 3000 });
        return (await jsm.streams.info(stream)).cluster?.leader;
      } finally {
        await nc.close();
      }
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    await cluster.waitForJetStream();
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}

/** The streams without a leader or with a replica that is offline or not current, each with what is wrong. */
async function unsettledStreams(url, admin) {
  const nc = await adminConnect(url, admin);
  try {
    const jsm = await nc.jetstreamManager({ timeout: 3000 });
    const out = [];
    for await (const info of jsm.streams.list()) {
      const c = info.cluster;
      if (!c) continue;
      const behind = (c.replicas ?? []).filter((r) => r.offline || !r.current);
      if (!c.leader || behind.length) {
        const why = behind.map((r) => `${r.name}: ${r.offline ? 'offline' : 'not current'}, lag ${r.lag ?? '?'}, last heard ${r.active === undefined ? '?' : `${(r.active / 1e9).toFixed(1)} s`} ago`);
        out.push(`${info.config.name} (${c.leader ? `leader ${c.leader}` : 'no leader'}${why.length ? `; ${why.join('; ')}` : ''})`);
      }
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Specs of `size` nodes on `host`: client ports from `clientPort`, route ports from `clusterPort`, monitoring from `httpPort` (0: none). */
function loopbackNodes({ size = 3, host = '127.0.0.1', clientPort, clusterPort, httpPort = 0 }) {
  return Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    host,
    port: clientPort + i,
    clusterHost: host,
    clusterPort: clusterPort + i,
    httpPort: httpPort ? httpPort + i : 0,
  }));
}

module.exports = { startNatsCluster, loopbackNodes, loadOrCreateRouteUser };
