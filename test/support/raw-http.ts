import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: string;
  body: string;
}

/**
 * Sends bytes as written (duplicate headers, oversized request lines, broken encodings that
 * `fetch` would refuse to send) and reads the answer until the server closes the connection.
 * `localAddress`: the client's own address (another loopback address, 127.0.0.2, is another client).
 */
export function rawRequest(origin: string, request: string, opts: { localAddress?: string } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect({ port: Number(port), host: hostname, localAddress: opts.localAddress });
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', (e) => (chunks.length ? undefined : reject(e)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      let body = rest.join('\r\n\r\n');
      if (/transfer-encoding: chunked/i.test(head)) body = unchunk(body);
      resolve({ status, headers: head, body });
    });
    socket.write(request.includes('Connection:') ? request : request.replace('\r\n', '\r\nConnection: close\r\n'));
  });
}

function unchunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    if (nl < 0) return out;
    const size = parseInt(rest.slice(0, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}

