/**
 * Duplicate webhook deliveries per crash: events published to EMITS (as the
 * runner does) → the delivery app (a real child process) → signed POSTs to a
 * local receiver that answers after a delay, so that about
 * `webhooks × 32` POSTs are in flight. The delivery app is killed with SIGKILL
 * in the middle of each burst and started again; the receiver counts what it
 * sees twice (same webhook and webhook-id), and sorts each duplicate by what
 * its first copy was at the kill: unanswered (truly in flight: unavoidable),
 * answered less than 50 ms before (its acknowledgement was on its way), or
 * answered earlier (an acknowledgement that waited: avoidable).
 *   npm run bench -- crash.bench     (or: node dist/apps/delivery/bench/crash.bench.js [--events 2000] [--webhooks 4] [--delay 20] [--crashes 3])
 * Knobs also as BENCH_EVENTS, BENCH_WEBHOOKS, BENCH_DELAY, BENCH_CRASHES. Prints one line per crash and a JSON line.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { JetStreamClient } from 'nats';
import { Client } from 'pg';
import 'reflect-metadata';
import { EmittedEvent, encodeJson, encryptValue } from '@app/contracts';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from '@app/db';
import { arg, createStreams, freePort, openBenchInstallation, ROOT, sleep, waitFor, waitForHealthy } from './bench-support';

/** An answer sent this close to the kill may not have been read by the sender yet. */
const RECENT_MS = 50;

interface Copy {
  receivedAt: number;
  answeredAt?: number;
}

class Receiver {
  /** `<webhook>|<emitter>:<webhook-id>` → every copy received. */
  readonly copies = new Map<string, Copy[]>();
  requests = 0;
  open = 0;
  server!: Server;
  url = '';
  constructor(private readonly delayMs: number) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const key = `${req.url}|${String(req.headers['x-pd-emitter-id'])}:${String(req.headers['webhook-id'])}`;
        const copy: Copy = { receivedAt: Date.now() };
        const list = this.copies.get(key);
        if (list) list.push(copy);
        else this.copies.set(key, [copy]);
        this.requests++;
        this.open++;
        setTimeout(() => {
          this.open--;
          res.writeHead(200).end();
          copy.answeredAt = Date.now();
        }, this.delayMs);
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Keys received at least once. */
  get distinct(): number {
    return this.copies.size;
  }
}

async function main(): Promise<void> {
  const events = arg('events', 2000);
  const webhooks = arg('webhooks', 4);
  const delayMs = arg('delay', 20);
  const crashes = arg('crashes', 3);
  const bench = await openBenchInstallation();
  const { dbUrl, natsUrl, prefix, names, users, nc } = bench;
  const js: JetStreamClient = nc.jetstream();
  let delivery: ChildProcess | undefined;
  const receiver = new Receiver(delayMs);
  try {
    const orm = await MikroORM.init(ormOptions(dbUrl));
    await orm.getMigrator().up();
    await orm.close(true);
    await receiver.start();
    const secretsKey = randomBytes(32);
    const db = new Client({ connectionString: dbUrl });
    await db.connect();
    const now = Date.now();
    const secs = Math.floor(now / 1000);
    await db.query(`insert into sources (id, owner_id, user_id, component_id, name, name_slug, configured_props, created_at_ms, created_at, updated_at) values ('dc_crash', 'u_bench', 'u_bench', 'sc_bench', 'crash', 'crash', '{}', $1, $2, $2)`, [now, secs]);
    for (let w = 0; w < webhooks; w++) {
      const secret = 'whsec_' + randomBytes(24).toString('base64');
      await db.query(`insert into webhooks (id, owner_id, user_id, url, active, secret, created_at_ms, created_at, updated_at) values ($1, 'u_bench', 'u_bench', $2, true, $3, $4, $5, $5)`, [`wh_crash${w}`, `${receiver.url}/w${w}`, JSON.stringify(encryptValue(secretsKey, secret)), now, secs]);
      await db.query(`insert into subscriptions (id, owner_id, emitter_id, listener_id, event_name, created_at) values ($1, 'u_bench', 'dc_crash', $2, '', $3)`, [`sub_crash${w}`, `wh_crash${w}`, secs]);
    }
    await db.end();
    const sql = async (text: string, params: unknown[]): Promise<Record<string, unknown>[]> => {
      const c = new Client({ connectionString: dbUrl });
      await c.connect();
      try {
        return (await c.query(text, params)).rows as Record<string, unknown>[];
      } finally {
        await c.end();
      }
    };
    const metricsPort = await freePort();
    await createStreams(natsUrl, prefix, users.admin);
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: dbUrl, NATS_URL: natsUrl, ...users.delivery, NATS_PREFIX: prefix, SECRETS_KEY: secretsKey.toString('hex'), ALLOW_LOOPBACK: 'true', DELIVERY_METRICS_PORT: String(metricsPort), DELIVERY_ACK_WAIT_MS: '3000', WEBHOOK_TIMEOUT_MS: '2000', LOG_LEVEL: 'warn' };
    const startDelivery = async (): Promise<ChildProcess> => {
      const child = spawn(process.execPath, [join(ROOT, 'dist', 'apps', 'delivery', 'main.js')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
      if (!(await waitForHealthy(metricsPort))) throw new Error('the delivery app did not become healthy');
      return child;
    };
    delivery = await startDelivery();

    let seq = 0;
    const publish = (): Promise<unknown> => {
      const t = Date.now();
      const ev: EmittedEvent = { id: `${t}-${seq++}`, emitterId: 'dc_crash', ownerId: 'u_bench', name: '', event: { n: seq }, emitId: `c${prefix}_${seq}`, ts: t, emittedAtMs: t };
      return js.publish(names.emit('dc_crash'), encodeJson(ev), { msgID: ev.emitId });
    };
    const publishAll = async (n: number): Promise<void> => {
      const inflight = new Set<Promise<unknown>>();
      for (let i = 0; i < n; i++) {
        const p = publish().finally(() => inflight.delete(p));
        inflight.add(p);
        if (inflight.size >= 200) await Promise.race(inflight);
      }
      await Promise.all(inflight);
    };

    // Warm-up: connections and JIT, no crash.
    await publishAll(200);
    await waitFor(() => receiver.distinct >= 200 * webhooks, 60_000);

    const rounds: Record<string, number>[] = [];
    for (let c = 1; c <= crashes; c++) {
      const before = new Map([...receiver.copies].map(([k, v]) => [k, v.length]));
      const requestsBefore = receiver.requests;
      const distinctBefore = receiver.distinct;
      const target = distinctBefore + events * webhooks;
      const publishing = publishAll(events);
      // Kill once a third of the burst has arrived.
      await waitFor(() => receiver.distinct >= distinctBefore + (events * webhooks) / 3, 60_000);
      const openAtKill = receiver.open;
      const killedAt = Date.now();
      delivery.kill('SIGKILL');
      await new Promise((r) => delivery!.once('exit', r));
      await publishing;
      delivery = await startDelivery();
      const complete = await waitFor(() => receiver.distinct >= target, 120_000);
      await sleep(500); // late duplicates
      // Success rows the killed process wrote (after its ack): a duplicate of such an event had its ack lost.
      const recorded = new Set(
        (await sql(`select webhook_id, emitter_id, event_id from webhook_deliveries where status = 'succeeded' and created_at_ms <= $1`, [killedAt])).map(
          (r) => `/w${String(r.webhook_id).slice('wh_crash'.length)}|${String(r.emitter_id)}:${String(r.event_id)}`,
        ),
      );
      let duplicates = 0;
      let unanswered = 0;
      let recent = 0;
      let earlier = 0;
      let oldestMs = 0;
      let withSuccessRow = 0;
      const answeredAgo: number[] = [];
      for (const [key, list] of receiver.copies) {
        if (before.has(key)) continue; // an event of an earlier round
        const extra = list.length - 1;
        if (extra <= 0) continue;
        duplicates += extra;
        if (recorded.has(key)) withSuccessRow += extra;
        const first = list[0];
        if (first.receivedAt > killedAt) continue;
        if (first.answeredAt === undefined || first.answeredAt > killedAt) unanswered += extra;
        else {
          answeredAgo.push(killedAt - first.answeredAt);
          if (killedAt - first.answeredAt <= RECENT_MS) recent += extra;
          else {
            earlier += extra;
            oldestMs = Math.max(oldestMs, killedAt - first.answeredAt);
          }
        }
      }
      answeredAgo.sort((a, b) => a - b);
      const round = { crash: c, deliveries: events * webhooks, open_at_kill: openAtKill, requests: receiver.requests - requestsBefore, duplicates, unanswered_at_kill: unanswered, answered_within_50ms: recent, answered_earlier: earlier, oldest_answer_ms: oldestMs, success_recorded_before_kill: withSuccessRow, complete: complete ? 1 : 0 };
      rounds.push(round);
      console.log(`crash ${c}: ${events} events × ${webhooks} webhooks = ${events * webhooks} deliveries, ${openAtKill} POSTs open at the receiver at the kill; ${duplicates} duplicates: ${unanswered} unanswered at the kill, ${recent} answered ≤ ${RECENT_MS} ms before it${answeredAgo.length ? ` (median ${answeredAgo[answeredAgo.length >> 1]} ms, max ${answeredAgo.at(-1)} ms)` : ''}, ${earlier} answered earlier${earlier ? ` (up to ${oldestMs} ms)` : ''}; ${withSuccessRow} had their success recorded before the kill${complete ? '' : ' INCOMPLETE'}`);
    }
    console.log(JSON.stringify({ bench: 'delivery-crash', receiver_delay_ms: delayMs, rounds }));
  } finally {
    delivery?.kill('SIGTERM');
    await sleep(500);
    receiver.server?.closeAllConnections();
    receiver.server?.close();
    await bench.close();
  }
}

main().catch((e: Error) => {
  console.error(`delivery crash bench failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
