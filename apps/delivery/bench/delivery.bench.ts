/**
 * Delivery throughput and latency: events published to EMITS (as the runner
 * does) → delivery app (indexer + router + webhook sender, a real child
 * process) → signed POST received by a local receiver.
 * Then an outage: the receiver answers 503 to `outage` events (they go to the
 * retry queue, an hour away with the default schedule), comes back, and one
 * new event's success pulls the backlog forward (catch-up).
 *   npm run bench -- delivery.bench      (or: node dist/apps/delivery/bench/delivery.bench.js [--events 20000] [--rate 1000] [--seconds 10] [--outage 20000] [--watch] [--profile])
 * Knobs also as BENCH_EVENTS, BENCH_RATE, BENCH_SECONDS, BENCH_OUTAGE. Needs Postgres (the bench
 * dispatcher's, DATABASE_URL, or postgres@127.0.0.1:5432) and NATS (the dispatcher's authenticated server, where the
 * delivery app gets its own user; else NATS_URL with NATS_USER / NATS_PASSWORD, or 127.0.0.1:4222).
 * Prints one line per scenario and a JSON line with every figure.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { JetStreamClient } from 'nats';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import 'reflect-metadata';
import { EmittedEvent, encodeJson, encryptValue, Names } from '@app/contracts';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from '@app/db';
import { arg, createStreams, freePort, openBenchInstallation, ROOT, sleep, waitFor, waitForHealthy } from './bench-support';


interface Receipt {
  latencyMs: number;
  at: number;
}

class Receiver {
  readonly receipts = new Map<string, Receipt>();
  verified = 0;
  badSignatures = 0;
  /** While true every request is answered 503 and not counted. */
  down = false;
  refused = 0;
  server!: Server;
  url = '';
  constructor(private readonly verifier: Webhook) {}

  async start(): Promise<void> {
    let n = 0;
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.down) {
          this.refused++;
          res.writeHead(503).end();
          return;
        }
        const at = Date.now();
        const body = Buffer.concat(chunks).toString('utf8');
        // Verify one request in 20 with the real library (verifying all would compete for the CPU being measured).
        if (n++ % 20 === 0) {
          try {
            this.verifier.verify(body, req.headers as Record<string, string>);
            this.verified++;
          } catch {
            this.badSignatures++;
          }
        }
        const id = `${String(req.headers['x-pd-emitter-id'])}:${String(req.headers['webhook-id'])}`;
        if (!this.receipts.has(id)) this.receipts.set(id, { latencyMs: at - (JSON.parse(body) as { t: number }).t, at });
        res.writeHead(200).end();
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

class Publisher {
  private seq = 0;
  constructor(private readonly js: JetStreamClient, private readonly names: Names) {}
  publish(): Promise<unknown> {
    const now = Date.now();
    const ev: EmittedEvent = { id: `${now}-${this.seq++}`, emitterId: 'dc_bench', ownerId: 'u_bench', name: '', event: { t: now, n: this.seq, pad: 'x'.repeat(200) }, emitId: `e${this.seq}_${now}`, ts: now, emittedAtMs: now };
    return this.js.publish(this.names.emit('dc_bench'), encodeJson(ev), { msgID: ev.emitId });
  }
}

async function main(): Promise<void> {
  const total = arg('events', 20_000);
  const rate = arg('rate', 1000);
  const seconds = arg('seconds', 10);
  const bench = await openBenchInstallation();
  const { dbUrl, natsUrl, prefix, names, users, nc } = bench;
  let delivery: ChildProcess | undefined;
  const receiverSecret = 'whsec_' + randomBytes(24).toString('base64');
  const receiver = new Receiver(new Webhook(receiverSecret));
  try {
    const orm = await MikroORM.init(ormOptions(dbUrl));
    await orm.getMigrator().up();
    await orm.close(true);
    await receiver.start();
    const secretsKey = randomBytes(32);
    const db = new Client({ connectionString: dbUrl });
    await db.connect();
    const now = Date.now();
    await db.query(`insert into webhooks (id, owner_id, user_id, url, active, secret, created_at_ms, created_at, updated_at) values ('wh_bench', 'u_bench', 'u_bench', $1, true, $2, $3, $4, $4)`, [receiver.url, JSON.stringify(encryptValue(secretsKey, receiverSecret)), now, Math.floor(now / 1000)]);
    await db.query(`insert into sources (id, owner_id, user_id, component_id, name, name_slug, configured_props, created_at_ms, created_at, updated_at) values ('dc_bench', 'u_bench', 'u_bench', 'sc_bench', 'bench', 'bench', '{}', $1, $2, $2)`, [now, Math.floor(now / 1000)]);
    await db.query(`insert into subscriptions (id, owner_id, emitter_id, listener_id, event_name, created_at) values ('sub_bench', 'u_bench', 'dc_bench', 'wh_bench', '', $1)`, [Math.floor(now / 1000)]);
    await db.end();
    // The api creates the streams and buckets; delivery only binds to them.
    await createStreams(natsUrl, prefix, users.admin);
    const metricsPort = await freePort();
    const profile = process.argv.includes('--profile') ? ['--cpu-prof', '--cpu-prof-dir=/tmp/delivery-prof'] : [];
    delivery = spawn(process.execPath, [...profile, join(ROOT, 'dist', 'apps', 'delivery', 'main.js')], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: dbUrl, NATS_URL: natsUrl, ...users.delivery, NATS_PREFIX: prefix, SECRETS_KEY: secretsKey.toString('hex'), ALLOW_LOOPBACK: 'true', DELIVERY_METRICS_PORT: String(metricsPort), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (!(await waitForHealthy(metricsPort))) throw new Error('the delivery app did not become healthy');
    const publisher = new Publisher(nc.jetstream(), names);

    // Warm-up: connections, JIT, prepared statements.
    await Promise.all(Array.from({ length: 500 }, () => publisher.publish()));
    await waitFor(() => receiver.receipts.size >= 500, 30_000);
    receiver.receipts.clear();

    const watch = process.argv.includes('--watch')
      ? setInterval(() => {
          void (async () => {
            const jsm = await nc.jetstreamManager();
            const info = async (stream: string, durable: string): Promise<string> => {
              const c = await jsm.consumers.info(stream, durable);
              return `${durable} pending ${c.num_pending} ack-pending ${c.num_ack_pending} redelivered ${c.num_redelivered}`;
            };
            const health = await fetch(`http://127.0.0.1:${metricsPort}/healthz`).then((r) => r.text()).catch(() => '');
            console.log(`[watch] ${health} received ${receiver.receipts.size}; ${await info(names.emitsStream, 'router')}; ${await info(names.deliveriesStream, 'webhook-sender')}`);
          })().catch(() => undefined);
        }, 2000)
      : undefined;
    // 1. Sustained throughput: publish `total` events as fast as NATS takes them (1,000 in flight).
    const started = Date.now();
    const inflight = new Set<Promise<unknown>>();
    for (let i = 0; i < total; i++) {
      const p = publisher.publish().finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= 1000) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    const published = Date.now();
    const allIn = await waitFor(() => receiver.receipts.size >= total, 300_000);
    const last = Math.max(...[...receiver.receipts.values()].map((r) => r.at));
    const throughput = (receiver.receipts.size / (last - started)) * 1000;
    const publishRate = (total / (published - started)) * 1000;
    console.log(`throughput: ${receiver.receipts.size}/${total} events delivered in ${last - started} ms = ${Math.round(throughput)} events/s (published at ${Math.round(publishRate)}/s)${allIn ? '' : ' INCOMPLETE'}`);
    receiver.receipts.clear();

    // 2. Latency at a steady rate: `rate` events/s for `seconds` seconds, emit → receipt.
    const count = rate * seconds;
    const tickMs = 10;
    const perTick = rate / (1000 / tickMs);
    const t0 = Date.now();
    let sent = 0;
    while (sent < count) {
      const due = Math.min(count, Math.floor(((Date.now() - t0) / tickMs + 1) * perTick));
      const burst: Promise<unknown>[] = [];
      for (; sent < due; sent++) burst.push(publisher.publish());
      await Promise.all(burst);
      await sleep(Math.max(0, t0 + (sent / perTick) * tickMs - Date.now()));
    }
    const complete = await waitFor(() => receiver.receipts.size >= count, 120_000);
    const lat = [...receiver.receipts.values()].map((r) => r.latencyMs).sort((a, b) => a - b);
    const figures = { p50: percentile(lat, 50), p95: percentile(lat, 95), p99: percentile(lat, 99), max: lat[lat.length - 1] };
    console.log(`latency at ${rate} events/s for ${seconds} s: p50 ${figures.p50} ms, p95 ${figures.p95} ms, p99 ${figures.p99} ms, max ${figures.max} ms (${receiver.receipts.size}/${count} delivered${complete ? '' : ', INCOMPLETE'})`);

    // 3. Outage and catch-up: `outage` events fail (one attempt each, then the retry queue), the receiver returns,
    // one new event succeeds and its success pulls the backlog forward.
    const outage = arg('outage', 20_000);
    let outageFigures: Record<string, number> | undefined;
    if (outage > 0) {
      receiver.receipts.clear();
      receiver.down = true;
      const db2 = new Client({ connectionString: dbUrl });
      await db2.connect();
      const waiting = async (): Promise<number> => (await db2.query(`select count(*)::int as n from webhook_retries`)).rows[0].n as number;
      const jsm = await nc.jetstreamManager();
      let maxAckPending = 0;
      const o0 = Date.now();
      const failing = new Set<Promise<unknown>>();
      for (let i = 0; i < outage; i++) {
        const p = publisher.publish().finally(() => failing.delete(p));
        failing.add(p);
        if (failing.size >= 1000) await Promise.race(failing);
      }
      await Promise.all(failing);
      let queued = 0;
      const deadline = Date.now() + 300_000;
      while (Date.now() < deadline && (queued = await waiting()) < outage) {
        maxAckPending = Math.max(maxAckPending, (await jsm.consumers.info(names.deliveriesStream, 'webhook-sender')).num_ack_pending);
        await sleep(200);
      }
      const queuedMs = Date.now() - o0;
      receiver.down = false;
      const back = Date.now();
      await publisher.publish();
      const progress = setInterval(() => {
        void db2.query(`select count(*)::int as n, (count(*) filter (where due_at_ms <= $1))::int as due from webhook_retries`, [Date.now()]).then(async (r) => {
          const c = await jsm.consumers.info(names.deliveriesStream, 'webhook-sender');
          const health = await fetch(`http://127.0.0.1:${metricsPort}/healthz`).then((x) => x.text()).catch(() => '');
          console.log(`[catch-up +${Date.now() - back} ms] received ${receiver.receipts.size}, waiting ${r.rows[0].n} (due ${r.rows[0].due}), stream pending ${c.num_pending}, ack-pending ${c.num_ack_pending}; ${health}`);
        }).catch(() => undefined);
      }, 5000);
      const caughtUp = await waitFor(() => receiver.receipts.size >= outage + 1, 600_000);
      clearInterval(progress);
      const lastAt = Math.max(...[...receiver.receipts.values()].map((r) => r.at));
      await db2.end();
      outageFigures = { events: outage, failed_per_s: Math.round((queued / queuedMs) * 1000), max_ack_pending: maxAckPending, catch_up_ms: lastAt - back, catch_up_per_s: Math.round(((outage + 1) / (lastAt - back)) * 1000) };
      console.log(`outage: ${queued}/${outage} failed events queued for retry in ${queuedMs} ms (${outageFigures.failed_per_s}/s, consumer ack-pending at most ${maxAckPending}); after the receiver returned, ${receiver.receipts.size}/${outage + 1} delivered in ${lastAt - back} ms (${outageFigures.catch_up_per_s}/s)${caughtUp ? '' : ' INCOMPLETE'}`);
    }
    clearInterval(watch);
    console.log(`signatures verified with standardwebhooks: ${receiver.verified} ok, ${receiver.badSignatures} bad`);
    console.log(JSON.stringify({ bench: 'delivery', events: total, throughput_events_per_s: Math.round(throughput), publish_rate_per_s: Math.round(publishRate), latency_rate_per_s: rate, latency_ms: figures, verified: receiver.verified, bad_signatures: receiver.badSignatures, outage: outageFigures }));
  } finally {
    delivery?.kill('SIGTERM');
    await sleep(500);
    receiver.server?.closeAllConnections();
    receiver.server?.close();
    await bench.close();
  }
}

main().catch((e: Error) => {
  console.error(`delivery bench failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
