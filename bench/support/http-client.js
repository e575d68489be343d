'use strict';
// The load generator's HTTP/1.1 client: keep-alive connections on plain sockets, a request written in one piece
// and its answer read just far enough for its status and Retry-After. Node's `http` client cost the bench process
// about 50 µs per request more (its request and response objects, header parsing, the agent's queues), on the
// same two cores the measured system runs on (docs/benchmarks.md, "The bench client"). `nodeHttpClient` is Node's,
// as runs 1–71 used it (`BENCH_HTTP=node`).
const http = require('node:http');
const net = require('node:net');

const { HEAD_END, header, chunked } = require('./http1');

/** One keep-alive connection: one request at a time (no pipelining). */
class Connection {
  constructor(host, port, onDone) {
    this.buf = Buffer.alloc(0);
    this.waiting = undefined;
    this.closed = false;
    this.socket = net.connect(port, host);
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      this.read();
    });
    const end = () => {
      this.closed = true;
      this.finish({ status: 0, retryAfter: 0 }, true);
      onDone(this);
    };
    this.socket.on('error', end);
    this.socket.on('close', end);
  }

  send(bytes) {
    if (this.closed) return Promise.resolve({ status: 0, retryAfter: 0 });
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(bytes);
    });
  }

  /** Settles the request in flight once its whole answer is in. */
  read() {
    if (!this.waiting) return;
    const headEnd = this.buf.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = this.buf.toString('latin1', 0, headEnd).toLowerCase();
    const status = Number(head.slice(9, 12));
    const bodyStart = headEnd + 4;
    let end;
    const length = header(head, 'content-length');
    if (length !== undefined) end = bodyStart + Number(length);
    else if (/chunked/.test(header(head, 'transfer-encoding') ?? '')) end = chunked(this.buf, bodyStart)?.end;
    else if (status === 204 || status === 304 || status < 200) end = bodyStart;
    else return; // read until the server closes the connection
    if (end === undefined || this.buf.length < end) return;
    this.buf = this.buf.subarray(end);
    const retryAfter = Number(header(head, 'retry-after')) || 0;
    this.finish({ status, retryAfter }, header(head, 'connection') === 'close');
  }

  finish(answer, close) {
    const resolve = this.waiting;
    this.waiting = undefined;
    if (close && !this.closed) {
      this.closed = true;
      this.socket.destroy();
    }
    if (resolve) resolve(answer);
  }
}

/**
 * POSTs over at most `maxConnections` keep-alive connections per origin; a request finding none free waits for
 * one. `post` resolves `{ status, retryAfter }` (status 0: the connection failed), like the answers of a browser's
 * or a webhook sender's client.
 */
class HttpClient {
  constructor(maxConnections) {
    this.max = maxConnections;
    this.origins = new Map();
  }

  async post(url, body) {
    const u = new URL(url);
    const origin = this.origins.get(u.host) ?? { idle: [], open: 0, queue: [], host: u.hostname, port: Number(u.port || 80) };
    this.origins.set(u.host, origin);
    const bytes = Buffer.from(
      `POST ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const conn = await this.take(origin);
    const answer = await conn.send(bytes);
    if (conn.closed) origin.open--;
    const next = origin.queue.shift();
    if (!conn.closed) (next ? next(conn) : origin.idle.push(conn));
    else if (next) next(this.open(origin));
    return answer;
  }

  take(origin) {
    const idle = origin.idle.pop();
    if (idle) return Promise.resolve(idle);
    if (origin.open < this.max) return Promise.resolve(this.open(origin));
    return new Promise((resolve) => origin.queue.push(resolve));
  }

  open(origin) {
    origin.open++;
    return new Connection(origin.host, origin.port, (conn) => {
      const i = origin.idle.indexOf(conn);
      if (i >= 0) {
        origin.idle.splice(i, 1);
        origin.open--;
      }
    });
  }

  destroy() {
    for (const origin of this.origins.values()) for (const conn of origin.idle) conn.socket.destroy();
    this.origins.clear();
  }
}

/** The same interface over Node's `http` client and a keep-alive agent. */
function nodeHttpClient(maxConnections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: maxConnections });
  const post = (url, body) =>
    new Promise((resolve) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, retryAfter: Number(res.headers['retry-after']) || 0 }));
      });
      req.on('error', () => resolve({ status: 0, retryAfter: 0 }));
      req.end(body);
    });
  return { post, destroy: () => agent.destroy() };
}

/** The load generator's client: `BENCH_HTTP=node` for Node's. */
const benchHttpClient = (maxConnections) => (process.env.BENCH_HTTP === 'node' ? nodeHttpClient(maxConnections) : new HttpClient(maxConnections));

/** What the bench client speaks HTTP with, for a bench's header line. */
const benchHttpKind = () => (process.env.BENCH_HTTP === 'node' ? "Node's http (BENCH_HTTP=node)" : 'plain sockets');

module.exports = { benchHttpClient, benchHttpKind };
