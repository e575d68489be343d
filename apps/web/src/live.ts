import { keyRefused } from './api';
import { session } from './session';
import type { EventSummary } from './types';

export type LiveState = 'connecting' | 'live' | 'retrying' | 'closed';

/**
 * Follows one of the server-sent event streams of a source (`/sse/dc/{id}/emits` or `/observations`)
 * or of a workflow (`/sse/p/{id}/…`, for a `p_…` id).
 * The API authenticates streams with the Bearer header like every route, and the browser's
 * EventSource cannot send headers, so this reads the stream with fetch. After a drop it reconnects
 * with `Last-Event-ID`, so the server replays what was missed.
 */
export function follow(emitterId: string, kind: 'emits' | 'observations', onEvent: (e: EventSummary) => void, onState: (s: LiveState) => void): () => void {
  const abort = new AbortController();
  let lastId: string | undefined;
  let closed = false;

  const connect = async (): Promise<void> => {
    onState('connecting');
    const org = session.org();
    const qs = new URLSearchParams({ expand: 'summary', ...(org ? { org_id: org } : {}) });
    const res = await fetch(`/sse/${emitterId.startsWith('p_') ? 'p' : 'dc'}/${encodeURIComponent(emitterId)}/${kind}?${qs}`, {
      headers: { authorization: `Bearer ${session.key() ?? ''}`, accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
      signal: abort.signal,
      cache: 'no-store',
    });
    if (!res.ok || !res.body) throw Object.assign(new Error(`stream answered ${res.status}`), { status: res.status });
    onState('live');
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      // Messages end with a blank line; lines end with \n, \r\n or \r.
      const messages = buffer.split(/\r\n\r\n|\n\n|\r\r/);
      buffer = messages.pop() ?? '';
      for (const message of messages) {
        let id: string | undefined;
        const data: string[] = [];
        for (const line of message.split(/\r\n|\n|\r/)) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') id = val;
          else if (field === 'data') data.push(val);
        }
        if (!data.length) continue;
        if (id) lastId = id;
        try {
          onEvent(JSON.parse(data.join('\n')) as EventSummary);
        } catch {
          // Not JSON: not an event of this API.
        }
      }
    }
  };

  void (async () => {
    let delay = 500;
    while (!closed) {
      try {
        await connect();
        delay = 500;
      } catch (e) {
        if (closed) break;
        const status = (e as { status?: number }).status;
        // 401/404: the key, the source or the workflow is gone; retrying cannot help. A refused key signs out, as any 401 does.
        if (status === 401) keyRefused();
        if (status === 401 || status === 404) break;
      }
      if (closed) break;
      onState('retrying');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10_000);
    }
    onState('closed');
  })();

  return () => {
    closed = true;
    abort.abort();
  };
}
