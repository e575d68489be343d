import { ApiClient, MAX_ERROR_BYTES, MAX_RESPONSE_BYTES, readUpTo } from './api-client';
import { ApiResponseError, CliError } from './errors';

export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

export interface StreamOptions {
  /** Resume after this event id (`Last-Event-ID`). */
  lastEventId?: string;
  signal: AbortSignal;
  onMessage: (msg: SseMessage) => void;
  /** Told about reconnects so the user knows the stream is not silent by accident. */
  onNotice?: (text: string) => void;
}

const RETRY_MS = [500, 1000, 2000, 5000];
/** The server sends a keepalive comment every 15 s: three missed ones mean the connection is dead. */
const IDLE_MS = 45_000;

/**
 * Follows a server-sent events stream of the API (`/sse/dc/<id>/emits` or
 * `/observations`) until the signal aborts. Reconnects with `Last-Event-ID`
 * after a dropped connection; a failure on the first connect, 401 or 404 ends
 * it with a CliError.
 */
export async function followStream(client: ApiClient, path: string, opts: StreamOptions): Promise<void> {
  let lastId = opts.lastEventId;
  let connectedOnce = false;
  let failures = 0;
  while (!opts.signal.aborted) {
    // What onMessage throws (a message pd refuses, a print that failed) ends the stream: it is no dropped connection.
    let handling = false;
    const conn = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    const alive = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => conn.abort(new DOMException('no keepalive', 'TimeoutError')), IDLE_MS);
    };
    try {
      alive(); // a server that takes the connection but never answers counts as silent too
      const headers: Record<string, string> = { ...client.headers(), accept: 'text/event-stream' };
      if (lastId) headers['last-event-id'] = lastId;
      const res = await fetch(client.url(path), { headers, signal: AbortSignal.any([opts.signal, conn.signal]) });
      if (!res.ok || !res.body) throw client.httpError(res.status, (await readUpTo(res, MAX_ERROR_BYTES).catch(() => ({ text: '' }))).text, `GET ${client.url(path)}`);
      if (connectedOnce && failures > 0) opts.onNotice?.('reconnected to the event stream');
      connectedOnce = true;
      failures = 0;
      for await (const msg of parseSse(res.body, alive, () => client.oversized(`a message of the event stream ${path}`))) {
        if (msg.id) lastId = msg.id;
        handling = true;
        opts.onMessage(msg);
        handling = false;
      }
    } catch (e) {
      if (opts.signal.aborted) return;
      if (handling) throw e;
      const err = e instanceof CliError ? e : client.networkError(e);
      const status = err instanceof ApiResponseError ? err.status : undefined;
      // The API's 5xx and a dropped connection are worth another try; what pd itself refused is not.
      const refused = e instanceof CliError && !(e instanceof ApiResponseError);
      if (!connectedOnce || refused || status === 401 || status === 403 || status === 404) throw err;
    } finally {
      clearTimeout(idle);
    }
    if (opts.signal.aborted) return;
    const delay = RETRY_MS[Math.min(failures, RETRY_MS.length - 1)];
    failures++;
    opts.onNotice?.(`event stream interrupted; reconnecting in ${delay / 1000}s`);
    await sleep(delay, opts.signal);
  }
}

/**
 * Parses the `text/event-stream` format: `id:`, `event:`, `data:` fields; `:` comments are keepalives.
 * A message (its lines so far and the line being read) longer than MAX_RESPONSE_BYTES characters ends
 * the stream with `tooLong()`'s error. The text of a line is joined once, when its end arrives, so a long
 * line costs its length, not its length per chunk. `onLine` is told of every whole line (a keepalive
 * comment too): bytes that never end a line do not keep a stream alive.
 */
export async function* parseSse(body: ReadableStream<Uint8Array>, onLine?: () => void, tooLong: () => Error = () => new CliError('an event stream message is too long')): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  const lineBreak = /\r\n|\n|\r/g;
  let pieces: string[] = [];
  let piecesLength = 0;
  let data: string[] = [];
  let dataLength = 0;
  let id: string | undefined;
  let event: string | undefined;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    const text = decoder.decode(chunk, { stream: true });
    pieces.push(text);
    piecesLength += text.length;
    if (/[\r\n]/.test(text)) {
      const buffer = pieces.join('');
      let start = 0;
      let m: RegExpExecArray | null;
      lineBreak.lastIndex = 0;
      while ((m = lineBreak.exec(buffer)) !== null) {
        // A \r at the very end waits for the next chunk, which may begin with its \n.
        if (m[0] === '\r' && m.index === buffer.length - 1) break;
        const line = buffer.slice(start, m.index);
        start = m.index + m[0].length;
        onLine?.();
        if (line === '') {
          if (data.length > 0) yield { id, event, data: data.join('\n') };
          data = [];
          dataLength = 0;
          event = undefined;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') {
          data.push(value);
          dataLength += value.length + 1;
        } else if (field === 'id') id = value;
        else if (field === 'event') event = value;
      }
      pieces = [buffer.slice(start)];
      piecesLength = pieces[0].length;
    }
    if (piecesLength + dataLength > MAX_RESPONSE_BYTES) throw tooLong();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}
