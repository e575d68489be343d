import { createSocket, type Socket } from 'node:dgram';

export interface DnsServer {
  socket: Socket;
  /** `127.0.0.1:<port>`, for `Resolver.setServers`. */
  server: string;
  /** Queries of each name (A and AAAA count one each). */
  queries: Map<string, number>;
  /** Answers the queries held so far (names starting with `held`) and those to come. */
  release(): void;
}

/**
 * A DNS server on loopback: `A` queries for `ok.test` get 192.0.2.7 (TTL 60 s), `ttl0.test` 192.0.2.8 (TTL 0), names
 * ending in `.loop.test` 127.0.0.1 (TTL 60 s), other names an empty answer. Queries for names starting with `silent`
 * get no answer at all (a tenant's domain whose server never answers); for names starting with `held`, the
 * `.loop.test` answer once `release()` is called (a server that answers slowly).
 */
export async function startDnsServer(): Promise<DnsServer> {
  const socket = createSocket('udp4');
  const queries = new Map<string, number>();
  const held: (() => void)[] = [];
  let released = false;
  socket.on('message', (q, peer) => {
    let at = 12;
    const labels: string[] = [];
    while (q[at] !== 0) {
      labels.push(q.subarray(at + 1, at + 1 + q[at]).toString());
      at += q[at] + 1;
    }
    const question = q.subarray(12, at + 5);
    const type = q.readUInt16BE(at + 1);
    const name = labels.join('.');
    queries.set(name, (queries.get(name) ?? 0) + 1);
    if (name.startsWith('silent')) return;
    const record = name.endsWith('.loop.test') ? [60, 127, 0, 0, 1] : { 'ok.test': [60, 192, 0, 2, 7], 'ttl0.test': [0, 192, 0, 2, 8] }[name];
    const answers = record && type === 1 ? [Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, record[0], 0, 4, ...record.slice(1)])] : [];
    const header = Buffer.from([q[0], q[1], 0x81, 0x80, 0, 1, 0, answers.length, 0, 0, 0, 0]);
    const answer = (): void => socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
    if (name.startsWith('held') && !released) held.push(answer);
    else answer();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const release = (): void => {
    released = true;
    for (const answer of held.splice(0)) answer();
  };
  return { socket, server: `127.0.0.1:${socket.address().port}`, queries, release };
}
