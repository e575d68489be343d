import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';
import { task } from './test-support/components';

/** A minimal WebSocket server (RFC 6455 handshake, one unmasked text frame per message). */
const upgraded = new Set<import('node:stream').Duplex>();

function wsServer(): Server {
  const server = createServer((_req, res) => res.writeHead(426).end());
  server.on('upgrade', (req, socket) => {
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    const text = Buffer.from(`hello ${req.url}`);
    socket.write(Buffer.concat([Buffer.from([0x81, text.length]), text]));
    upgraded.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
  });
  return server;
}

describe("SandboxPool: Pipedream's Node runtime globals", () => {
  let pool: SandboxPool;
  let server: Server;
  let port = 0;

  beforeAll(async () => {
    pool = new SandboxPool({ threads: 1, heapMb: 128, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-npm-')) });
    server = wsServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await pool.close();
    for (const s of upgraded) s.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('has WebSocket, fetch and their companions as globals, and a WebSocket connects and receives', async () => {
    const code = `
      export default {
        name: "ws", version: "1", props: { url: { type: "string" } },
        async run() {
          const kinds = ["WebSocket", "fetch", "Headers", "Request", "Response", "FormData", "Blob", "AbortController", "URL", "TextEncoder", "structuredClone", "crypto", "MessageEvent", "CloseEvent"].map((n) => [n, typeof globalThis[n]]);
          const message = await new Promise((resolve, reject) => {
            const ws = new WebSocket(this.url);
            ws.onmessage = (e) => { resolve(e.data); ws.close(); };
            ws.onerror = (e) => reject(new Error("websocket error " + (e.message ?? "")));
          });
          this.$emit({ kinds: Object.fromEntries(kinds), message });
        },
      };`;
    const r = await pool.execute(task(code, { props: { url: `ws://127.0.0.1:${port}/feed-${randomBytes(2).toString('hex')}` } }));
    expect(r.error).toBeUndefined();
    const { kinds, message } = r.emits[0].event as { kinds: Record<string, string>; message: string };
    expect(Object.values(kinds).every((k) => k === 'function' || k === 'object')).toBe(true);
    expect(kinds.WebSocket).toBe('function');
    expect(message).toMatch(/^hello \/feed-[0-9a-f]{4}$/);
  });

  it('gives a dir prop (File Stash) whose methods say that File Stash is not available', async () => {
    const code = `export default { name: "stash", version: "1", props: { dir: { type: "dir", accessMode: "write", optional: true } },
      async run() {
        let error;
        try { await this.dir.open("a/b.txt").fromReadableStream(null, "text/plain", 0); } catch (e) { error = { name: e.name, message: e.message }; }
        this.$emit({ kind: typeof this.dir, error });
      } };`;
    const r = await pool.execute(task(code));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ kind: 'object', error: { name: 'FileStashUnavailableError', message: 'File Stash is not available in this service: the "dir" dir prop cannot store or read files' } });
  });
});
