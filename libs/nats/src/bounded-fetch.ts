import type { Consumer, FetchOptions, JsMsg } from 'nats';
import { BATCH_BYTES } from './batch-bytes';

/** What the server counts of a message beyond its payload and headers (its subject, its reply subject). */
const MESSAGE_ROOM_BYTES = 64 * 1024;
/** How long a fetch waits for messages not stored yet: none a scan needs (it stops at the last it was asked for). */
const FETCH_EXPIRES_MS = 2_000;
/** Fetches in a row that bring nothing while the consumer has messages left before the scan gives up (throws). */
const EMPTY_FETCHES_MAX = 5;

/**
 * The options of one fetch bounded by bytes on the server: BATCH_BYTES, or one message at the largest (with what the
 * server counts of it). New ones for each fetch: the client writes its count of messages into them.
 */
export function bytesFetch(maxPayload: number, expires: number): FetchOptions {
  return { max_bytes: Math.max(BATCH_BYTES, maxPayload + MESSAGE_ROOM_BYTES), expires };
}

/**
 * A fetch's messages as they come, until `last(message)` or the count the client bounds a fetch by bytes with too (it
 * writes it into `opts`: 100). Once that many came the server has sent them all, but the fetch would wait out its
 * expiry for the bytes it was not sent. (Should the client no longer write it, each such fetch only waits out its
 * expiry again: slower, nothing missed.)
 */
export async function* fetchedMessages(messages: AsyncIterable<JsMsg>, opts: FetchOptions, last: (m: JsMsg) => boolean = () => false): AsyncGenerator<JsMsg> {
  let n = 0;
  for await (const m of messages) {
    yield m;
    if (++n === opts.max_messages || last(m)) return;
  }
}

/**
 * Reads an ordered consumer up to stream sequence `lastSeq` (or to the end of what it has), one batch at a time: the
 * messages of one fetch, bounded by bytes on the server (BATCH_BYTES, or one message at the largest), the next fetch
 * once the caller has handled a batch. Many small messages come in one fetch and few large ones; a fixed count of
 * messages would be slow for the small ones (2 at a time: 600 fetches for 1,200 events) or unbounded for the
 * large ones (500 at a time: up to 500 MB). A fetch is read whole before its batch is handed over: one that ends
 * while its messages wait unread drops them (the ordered consumer does not ask for them again).
 */
export async function* boundedFetches(consumer: Consumer, lastSeq: number, maxPayload: number): AsyncGenerator<JsMsg[]> {
  for await (const fetched of fetchesThrough(consumer, lastSeq, maxPayload)) {
    const messages = fetched.filter((m) => m.seq <= lastSeq);
    if (messages.length) yield messages;
  }
}

/**
 * `boundedFetches` for a reader that goes on reading the consumer after `lastSeq` (a resumed event stream): each
 * fetch's messages as it brought them, also those past `lastSeq` the last one brought (the consumer does not send
 * them again). Ends after the fetch that reached `lastSeq` or the end of what the consumer had.
 */
export async function* fetchesThrough(consumer: Consumer, lastSeq: number, maxPayload: number): AsyncGenerator<JsMsg[]> {
  let emptyFetches = 0;
  for (;;) {
    const opts = bytesFetch(maxPayload, FETCH_EXPIRES_MS);
    const messages: JsMsg[] = [];
    for await (const m of fetchedMessages(await consumer.fetch(opts), opts, (m) => m.info.pending === 0 || m.seq >= lastSeq)) messages.push(m);
    const last = messages.at(-1);
    if (last) {
      yield messages;
      if (last.info.pending === 0 || last.seq >= lastSeq) return;
      emptyFetches = 0;
      continue;
    }
    // Nothing came within the expiry: the end, or a server too busy to send in time. The consumer says which; a scan
    // that stopped here silently would leave the rest of its range (a delete that answered as if done).
    const info = await consumer.info();
    if (info.num_pending === 0 || info.delivered.stream_seq >= lastSeq) return;
    if (++emptyFetches >= EMPTY_FETCHES_MAX) throw new Error(`${info.num_pending} messages were not sent in ${EMPTY_FETCHES_MAX} fetches of ${FETCH_EXPIRES_MS} ms`);
  }
}
