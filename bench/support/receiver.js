'use strict';
// The webhook receiver every end-to-end benchmark posts to, for this project and
// its peers alike: records when each event (its body's `n`) first arrived, counts
// duplicates, and checks a sample of Standard Webhooks signatures when given a secret.
// HTTP/1.1 read from plain sockets (bodies with Content-Length or chunked, keep-alive), answered `200` with an
// empty body: Node's `http` server cost the bench process about 40 µs per event more, on the two cores the measured
// system runs on (docs/benchmarks.md, "The bench client"); `BENCH_HTTP=node` serves with it, as runs 1–71 did.
const http = require('node:http');
const net = require('node:net');
const { Webhook } = require('standardwebhooks');
const { HEAD_END, header, chunked } = require('./http1');

const OK = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
const BAD = Buffer.from('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');

/** Reads requests off one connection; `onRequest(body, header, headers)` for each whole one. */
function serve(socket, onRequest) {
  let buf = Buffer.alloc(0);
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      const headEnd = buf.indexOf(HEAD_END);
      if (headEnd < 0) return;
      const rawHead = buf.toString('latin1', 0, headEnd);
      const head = rawHead.toLowerCase();
      let body;
      let end;
      const length = header(head, 'content-length');
      if (length !== undefined) {
        end = headEnd + 4 + Number(length);
        if (buf.length < end) return;
        body = buf.subarray(headEnd + 4, end);
      } else if (/chunked/.test(header(head, 'transfer-encoding') ?? '')) {
        const c = chunked(buf, headEnd + 4);
        if (!c) return;
        if (c.bad) return void socket.end(BAD);
        ({ body, end } = c);
      } else {
        end = headEnd + 4;
        body = Buffer.alloc(0);
      }
      buf = buf.subarray(end);
      onRequest(body.toString('utf8'), (name) => header(head, name), () => headersOf(rawHead));
      socket.write(OK);
    }
  });
}

/** A request's headers as an object (lower-case names), for the signature check. */
function headersOf(rawHead) {
  const headers = {};
  for (const line of rawHead.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

async function startReceiver() {
  const r = { receipts: new Map(), emittedAt: new Map(), ever: new Set(), duplicates: 0, verified: 0, bad: 0, url: '', verifier: undefined };
  let seen = 0;
  const sockets = new Set();
  /** `header(name)`: one header's value; `headers()`: all of them (lower-case names). */
  const onRequest = (body, header, headers) => {
    const at = Date.now();
    if (r.verifier && seen++ % 20 === 0) {
      try {
        r.verifier.verify(body, headers());
        r.verified++;
      } catch {
        r.bad++;
      }
    }
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = {};
    }
    if (typeof parsed.n !== 'number') return;
    r.ever.add(parsed.n);
    if (r.receipts.has(parsed.n)) return void r.duplicates++;
    r.receipts.set(parsed.n, at);
    // This project's event id starts with the emit time (`<epoch_ms>-<seq>`): where an event's time went.
    const emittedAt = Number(String(header('x-pd-event-id') ?? '').split('-')[0]);
    if (emittedAt) r.emittedAt.set(parsed.n, emittedAt);
  };
  // Connections opened to it: a sender that does not keep its connections alive costs the receiver more per event.
  r.connections = 0;
  const server = process.env.BENCH_HTTP === 'node'
    ? http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        onRequest(Buffer.concat(chunks).toString('utf8'), (name) => req.headers[name], () => req.headers);
        res.writeHead(200).end();
      });
    })
    : net.createServer((socket) => serve(socket, onRequest));
  if (server instanceof http.Server) server.keepAliveTimeout = 30_000;
  server.on('connection', (socket) => {
    r.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  r.verifyWith = (secret) => {
    r.verifier = new Webhook(secret);
  };
  // `ever` keeps every event received since start (not cleared by reset): for a whole run's loss count.
  r.reset = () => {
    r.receipts.clear();
    r.emittedAt = new Map();
    r.duplicates = 0;
  };
  r.close = () => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${server.address().port}/hook`;
  return r;
}

module.exports = { startReceiver };
