import { randomBytes } from 'node:crypto';
import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { Client } from 'pg';
import { EmittedEvent, encodeJson, Names, newId } from '@app/contracts';
import { HTTP_SOURCE } from './support/components';
import { eventually, System } from './support/system';

/**
 * Helpers for the events, subscriptions, webhooks, delivery and SSE tests:
 * rows and emits that other apps normally produce, made directly so these
 * tests do not depend on the runner.
 */
export async function sql<T = Record<string, unknown>>(system: System, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: system.databaseUrl });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** A source row as the sources api would create it (no runner needed to read its events). */
export async function insertSource(system: System, ownerId: string, userId = ownerId): Promise<string> {
  const id = newId('source');
  const now = Date.now();
  await sql(system, `insert into sources (id, owner_id, user_id, component_id, name, name_slug, configured_props, active, rev, published_rev, created_at_ms, created_at, updated_at)
    values ($1, $2, $3, 'sc_test', $4, $4, '{}', true, 1, 0, $5, $6, $6)`, [id, ownerId, userId, `src-${id.slice(3, 12)}`, now, Math.floor(now / 1000)]);
  return id;
}

export class Emitter {
  private seq = 0;
  private constructor(readonly nc: NatsConnection, readonly names: Names) {}

  static async connect(system: System): Promise<Emitter> {
    const nc = await connect(natsAdmin());
    return new Emitter(nc, new Names(system.natsPrefix));
  }

  /** Publishes one event to EMITS exactly as the runner does; returns it. */
  async emit(emitterId: string, ownerId: string, data: unknown, opts: { name?: string; idMs?: number; id?: string } = {}): Promise<EmittedEvent> {
    const now = opts.idMs ?? Date.now();
    const ev: EmittedEvent = {
      id: opts.id ?? `${now}-${this.seq++}`,
      emitterId,
      ownerId,
      name: opts.name ?? '',
      event: data,
      emitId: `emit_${randomBytes(8).toString('hex')}`,
      ts: now,
      emittedAtMs: Date.now(),
    };
    const js = this.nc.jetstream();
    await js.publish(this.names.emit(emitterId), encodeJson(ev), { msgID: ev.emitId });
    return ev;
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}

export interface Received {
  /** The path and query the request was sent to. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * A real local webhook receiver. `respond` decides each answer (default 200);
 * it may return a promise to answer late or never.
 */
export class Receiver {
  readonly received: Received[] = [];
  respond: (req: Received, n: number) => Promise<Answer | undefined> | Answer = () => ({ status: 200, body: 'ok' });
  private server?: import('node:http').Server;
  url = '';

  async start(host = '127.0.0.1'): Promise<this> {
    const { createServer } = await import('node:http');
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = { url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        this.received.push(r);
        void Promise.resolve(this.respond(r, this.received.length)).then((answer) => {
          if (!answer) return; // never answer
          res.writeHead(answer.status, answer.headers ?? {});
          res.end(answer.body ?? '');
        });
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, host, r));
    this.url = `http://${host}:${(this.server.address() as { port: number }).port}/hook`;
    return this;
  }

  /** Distinct `x-pd-event-id` values received (event ids are unique per emitter). */
  eventIds(): Set<string> {
    return new Set(this.received.map((r) => String(r.headers['x-pd-event-id'])));
  }

  /** Distinct `<x-pd-emitter-id>:<webhook-id>` pairs received: the dedupe key of a receiver fed by several sources. */
  ids(): Set<string> {
    return new Set(this.received.map((r) => `${String(r.headers['x-pd-emitter-id'])}:${String(r.headers['webhook-id'])}`));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/**
 * Waits until the delivery app's subscription cache holds every routable
 * subscription in the database (its /healthz reports the count it loaded).
 */
export async function subscriptionsLoaded(system: System): Promise<void> {
  const [{ n }] = await sql<{ n: number }>(system, `select count(*)::int as n from subscriptions s
    where (s.listener_id like 'dc\\_%' and exists (select 1 from sources x where x.id = s.listener_id and x.deleted_at is null))
       or (s.listener_id like 'wh\\_%' and exists (select 1 from webhooks w where w.id = s.listener_id and w.active))
       or (s.listener_id like 'p\\_%' and exists (select 1 from workflows p where p.id = s.listener_id and p.deleted_at is null))`);
  const port = system.env.DELIVERY_METRICS_PORT;
  const deadline = Date.now() + 15_000;
  let seen: number | undefined;
  while (Date.now() < deadline) {
    const h = (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.json()).catch(() => ({}))) as { subscriptions?: number };
    seen = h.subscriptions;
    if (seen === n) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`delivery loaded ${seen} subscriptions, the database has ${n}`);
}

/** An HTTP source (HTTP_SOURCE) of the caller, subscribed to a new webhook to `receiverUrl`, once delivery has loaded the route. */
export async function httpSourceToWebhook(
  system: System,
  api: { post(path: string, body?: unknown): Promise<{ status: number; body: any }> },
  receiverUrl: string,
): Promise<{ src: string; componentId: string; url: string; wh: string }> {
  const created = await api.post('/sources', { component_code: HTTP_SOURCE });
  if (created.status !== 200) throw new Error(`POST /sources answered ${created.status}: ${JSON.stringify(created.body)}`);
  const wh: string = (await api.post('/webhooks', { url: receiverUrl })).body.data.id;
  const subscribed = await api.post('/subscriptions', { emitter_id: created.body.data.id, listener_id: wh });
  if (subscribed.status !== 200) throw new Error(`POST /subscriptions answered ${subscribed.status}`);
  await subscriptionsLoaded(system);
  return { src: created.body.data.id, componentId: created.body.data.component_id, url: created.body.data.configured_props.http.endpoint_url, wh };
}

/** Posts `{"i":-1}` to a source's endpoint until it answers 200 and the receiver has an event: the path is live end to end. */
export async function firstDelivered(url: string, receiver: { received: unknown[] }): Promise<void> {
  const post = (): Promise<Response> => fetch(url, { method: 'POST', body: '{"i":-1}', headers: { 'content-type': 'application/json' } });
  await eventually(async () => (await post()).status === 200 && receiver.received.length > 0, { what: 'the first event delivered', timeoutMs: 30_000, intervalMs: 500 });
}

/**
 * Reads an event stream to its end: true when the server ended it, false when `ac` aborted it first (after
 * `withinMs`). Each chunk read is handed to `onText`.
 */
export async function streamEnds(reader: ReadableStreamDefaultReader<Uint8Array>, ac: AbortController, withinMs: number, onText?: (text: string) => void): Promise<boolean> {
  const guard = setTimeout(() => ac.abort(), withinMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return true;
      onText?.(new TextDecoder().decode(value));
    }
  } catch {
    return false;
  } finally {
    clearTimeout(guard);
  }
}
