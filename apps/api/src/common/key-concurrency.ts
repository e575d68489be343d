import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sha256Hex } from '@app/contracts';
import { bearerKey } from '../auth/api-key.guard';
import { clientNetwork } from './client-network';

/** Requests of one key waiting for a turn at most; more are refused at once. */
const MAX_WAITING_PER_KEY = 1_000;

interface Lane {
  running: number;
  waiting: (() => void)[];
}

/**
 * At most `limit` requests per key run at once; the others wait in the key's own queue (first come, first
 * served) for at most `waitMs`. One account's burst then waits behind itself, instead of filling the
 * Postgres pool's queue, where every other account's requests would wait behind it.
 */
export class KeyConcurrency {
  private readonly lanes = new Map<string, Lane>();

  constructor(
    readonly limit: number,
    private readonly waitMs: number,
  ) {}

  /** Resolves to the function that ends the turn, or undefined when the key's queue is full or the wait ran out. */
  acquire(key: string): Promise<(() => void) | undefined> {
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { running: 0, waiting: [] }));
    const l = lane;
    const turn = (): (() => void) => {
      l.running++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        l.running--;
        const next = l.waiting.shift();
        if (next) next();
        else if (l.running === 0) this.lanes.delete(key);
      };
    };
    if (l.running < this.limit) return Promise.resolve(turn());
    if (l.waiting.length >= MAX_WAITING_PER_KEY || this.waitMs === 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const go = (): void => {
        clearTimeout(timer);
        resolve(turn());
      };
      const timer = setTimeout(() => {
        const i = l.waiting.indexOf(go);
        if (i >= 0) l.waiting.splice(i, 1);
        resolve(undefined);
      }, this.waitMs);
      l.waiting.push(go);
    });
  }

  /** Keys with requests running or waiting (for tests). */
  get activeKeys(): number {
    return this.lanes.size;
  }
}

/** A counted request's turn: ended once, when its answer has left (or when its client left before it began, or after it was answered). */
interface Turn {
  release: () => void;
  /** Its handler has started: the turn lasts until it has answered, whether or not the client is still there. */
  handling: boolean;
  /** Its client went away before the handler started: the handler is not run. */
  gone: boolean;
  /** Its answer is being sent: the turn ends once it has been written out, or the connection closed. */
  answered: boolean;
}

/**
 * The lane a request waits in: its API key's (by the key's hash: no lookup needed, a refused request costs no query),
 * or, without a key, its client address's: `req.ip`, the address of the connection, or the client a proxy named in
 * TRUST_PROXY forwarded for — never an X-Forwarded-For a client wrote itself; an IPv6 one by its /64 (clientNetwork).
 * Keyless requests shared one lane before, so a few clients holding slow bodies open had every other keyless request
 * (`/v1/openapi.json`, a request about to be answered 401) refused 429.
 */
function laneOf(req: FastifyRequest): { lane: string; keyless: boolean } {
  const key = bearerKey(req.headers.authorization);
  return key ? { lane: sha256Hex(key), keyless: false } : { lane: `address:${clientNetwork(req.ip)}`, keyless: true };
}

/**
 * Applies a KeyConcurrency to `/v1` requests (by the route matched, however the path is escaped), in the lane of the
 * request's API key, or of its client address without one (laneOf). Event streams (`/sse`) stay open for long and the
 * public `/e/` ingress has its own limits: neither counts. A request that waited too long gets 429 with Retry-After.
 *
 * A turn ends when the answer has been written out (or the connection closed after it was ready), not when the
 * connection closes while the api works on it: a client that went away while its request was at work (a slow query,
 * a wait for a lock) ended the turn at once before, while the api went on working on it, so one key could have any
 * number of requests at work by abandoning each, and hold every Postgres connection. A request whose client left
 * before its handler began is not handled at all.
 */
export function registerKeyConcurrency(fastify: FastifyInstance, limiter: KeyConcurrency): void {
  if (limiter.limit <= 0) return;
  const turns = new WeakMap<object, Turn>();
  fastify.addHook('onRequest', async (req, reply) => {
    // By the route the router matched too: it reads the path decoded, so `/%761/sources` is `/v1/sources` (and was
    // not counted when only the URL as sent was looked at).
    if (!req.url.startsWith('/v1/') && !req.routeOptions?.url?.startsWith('/v1/')) return;
    const { lane, keyless } = laneOf(req);
    const release = await limiter.acquire(lane);
    if (!release) {
      return reply
        .status(429)
        .header('retry-after', '1')
        .send({
          error: `too many requests at once ${keyless ? 'without an API key from this address' : 'with this API key'}: at most ${limiter.limit} run at a time and the others did not get their turn in time; retry after 1 s`,
          code: 'rate_limited',
          details: { max_concurrent: limiter.limit, retry_after_seconds: 1 },
        });
    }
    const turn: Turn = { release, handling: false, gone: false, answered: false };
    turns.set(req, turn);
    const closed = (): void => {
      if (turn.handling && !turn.answered) return;
      turn.gone = !turn.handling;
      release();
    };
    reply.raw.once('close', closed);
    if (reply.raw.destroyed) closed();
  });
  fastify.addHook('preHandler', async (req, reply) => {
    const turn = turns.get(req);
    if (!turn) return;
    // Nobody is there to read the answer, and the turn has ended: the work is not done.
    if (turn.gone) return reply.status(400).send({ error: 'the client went away before its request was handled', code: 'invalid_request' });
    turn.handling = true;
  });
  // The turn lasts until the answer has left for the client (or its connection closed), not only until it is ready: an
  // answer the client does not read waits in the api's memory, and 150 connections of one key that asked for pages of
  // large events (8 MiB each, `expand=event`) and read nothing held 3.4 GB of the api, each turn ended as its answer
  // was ready. Now the key's unread answers are its API_MAX_CONCURRENT_PER_KEY turns at most.
  fastify.addHook('onSend', async (req, reply) => {
    const turn = turns.get(req);
    if (!turn) return;
    turn.answered = true;
    if (reply.raw.destroyed || reply.raw.writableFinished) return turn.release();
    reply.raw.once('finish', turn.release);
  });
}
