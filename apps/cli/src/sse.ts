import { ApiClient } from './api-client';
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
    const conn = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    const alive = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => conn.abort(), IDLE_MS);
    };
    try {
      const headers: Record<string, string> = { ...client.headers(), accept: 'text/event-stream' };
      if (lastId) headers['last-event-id'] = lastId;
      const res = await fetch(client.url(path), { headers, signal: AbortSignal.any([opts.signal, conn.signal]) });
      if (!res.ok || !res.body) throw client.httpError(res.status, await res.text().catch(() => ''));
      if (connectedOnce && failures > 0) opts.onNotice?.('reconnected to the event stream');
      connectedOnce = true;
      failures = 0;
      alive();
      for await (const msg of parseSse(res.body, alive)) {
        if (msg.id) lastId = msg.id;
        opts.onMessage(msg);
      }
    } catch (e) {
      if (opts.signal.aborted) return;
      const err = e instanceof CliError ? e : client.networkError(e);
      const status = err instanceof ApiResponseError ? err.status : undefined;
      if (!connectedOnce || status === 401 || status === 403 || status === 404) throw err;
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

/** Parses the `text/event-stream` format: `id:`, `event:`, `data:` fields; `:` comments are keepalives. */
export async function* parseSse(body: ReadableStream<Uint8Array>, onChunk?: () => void): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let id: string | undefined;
  let event: string | undefined;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    onChunk?.();
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.search(/\r?\n|\r/)) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer[nl] === '\r' && buffer[nl + 1] === '\n' ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield { id, event, data: data.join('\n') };
        data = [];
        event = undefined;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
      else if (field === 'event') event = value;
    }
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
