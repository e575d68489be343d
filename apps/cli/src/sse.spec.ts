import { parseSse, SseMessage } from './sse';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(enc.encode(c));
      controller.close();
    },
  });
}

describe('SSE parsing', () => {
  it('reads ids and data across chunk boundaries and skips keepalive comments', async () => {
    const msgs: SseMessage[] = [];
    for await (const m of parseSse(streamOf([':sse-handshake\n\n', 'id: 1-0\nda', 'ta: {"a":1}\n\n', 'id: 1-1\r\ndata: line1\r\ndata: line2\r\n\r\n', 'data: partial']))) msgs.push(m);
    expect(msgs).toEqual([
      { id: '1-0', event: undefined, data: '{"a":1}' },
      { id: '1-1', event: undefined, data: 'line1\nline2' },
    ]);
  });

  it('reads a CRLF split between chunks as one line break', async () => {
    const msgs: SseMessage[] = [];
    for await (const m of parseSse(streamOf(['data: a\r', '\ndata: b\r\n\r', '\n']))) msgs.push(m);
    expect(msgs).toEqual([{ id: undefined, event: undefined, data: 'a\nb' }]);
  });
});
