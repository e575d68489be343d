import type { System } from './system';

/** One SSE frame as a client reads it: its id, data and comment lines. */
export interface Frame {
  id?: string;
  data?: string;
  comment?: string;
}

/** Reads an SSE response into frames as they arrive. */
export async function openStream(system: System, path: string, apiKey: string, lastEventId?: string): Promise<{ status: number; frames: Frame[]; close: () => void; contentType: string | null; headers: Headers }> {
  const ac = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const res = await fetch(system.origin + path, { headers, signal: ac.signal });
  const frames: Frame[] = [];
  if (res.ok && res.body) {
    void (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f: Frame = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) f.comment = line.slice(1);
            else if (line.startsWith('id: ')) f.id = line.slice(4);
            else if (line.startsWith('data: ')) f.data = line.slice(6);
          }
          frames.push(f);
        }
      }
    })().catch(() => undefined);
  }
  return { status: res.status, frames, close: () => ac.abort(), contentType: res.headers.get('content-type'), headers: res.headers };
}

/** Reads an SSE response as raw text as it arrives (for streams whose frames carry `event:` lines or many data lines). */
export async function openText(system: System, path: string, apiKey: string): Promise<{ status: number; text: () => string; close: () => void }> {
  const ac = new AbortController();
  const res = await fetch(system.origin + path, { headers: { authorization: `Bearer ${apiKey}` }, signal: ac.signal });
  let text = '';
  if (res.body) {
    const reader = res.body.getReader();
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) break;
        text += Buffer.from(value as Uint8Array).toString('utf8');
      }
    })();
  }
  return { status: res.status, text: () => text, close: () => ac.abort() };
}
