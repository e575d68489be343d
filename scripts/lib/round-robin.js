'use strict';
// A tiny HTTP round-robin in front of several api replicas (`npm run cluster`, the fault suite): each
// request goes to the next replica; a replica that refuses the connection (stopped, restarting) is
// skipped for a second and the request goes to the next one — it never reached the refused replica,
// so trying another is safe. A replica that fails after it got the request is not retried (the
// request may have been acted upon): the client gets 502. Response bodies stream (SSE works); request
// bodies are read first (the api caps them far below MAX_BODY). Appends the client's address to X-Forwarded-For
// (the api reads it with TRUST_PROXY: cluster-system.js names the round-robin's address, docker-compose.yml one hop),
// and writes X-Forwarded-Host and X-Forwarded-Proto itself (a client's own are not passed on, nor its Forwarded).
const http = require('node:http');

const MAX_BODY = 8 * 1024 * 1024;
const DOWN_MS = 1000;

function json(res, status, body) {
  if (res.headersSent) return res.destroy();
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Starts the proxy on `host:port` for `upstreams` (`[{ host, port }]`); resolves to `{ url, close() }`. */
function startRoundRobin({ host = '127.0.0.1', port, upstreams }) {
  const state = upstreams.map((u) => ({ ...u, downUntil: 0 }));
  let next = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  const pick = (tried) => {
    const now = Date.now();
    for (let i = 0; i < state.length; i++) {
      const u = state[(next + i) % state.length];
      if (!tried.has(u) && u.downUntil <= now) {
        next = (next + i + 1) % state.length;
        return u;
      }
    }
    // Every replica refused lately: try one we have not tried in this request anyway.
    return state.find((u) => !tried.has(u));
  };

  const forward = (req, res, body, tried) => {
    const u = pick(tried);
    if (!u) return json(res, 502, { error: 'no api replica accepted the connection', code: 'bad_gateway' });
    tried.add(u);
    // The api believes these from this hop (TRUST_PROXY): what the client sent is replaced by what this proxy saw, so a
    // client cannot choose the host or scheme the api takes the request for (an endpoint's own host, under which a
    // component's cookies keep their Path). X-Forwarded-For is appended to: the api reads the entry of this hop.
    const headers = {
      ...req.headers,
      'x-forwarded-for': [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', '),
      'x-forwarded-proto': 'http',
    };
    if (req.headers.host) headers['x-forwarded-host'] = req.headers.host;
    else delete headers['x-forwarded-host'];
    delete headers.forwarded;
    headers['content-length'] = String(body.length);
    delete headers['transfer-encoding'];
    const up = http.request({ host: u.host, port: u.port, method: req.method, path: req.url, headers, agent });
    up.on('response', (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
      res.on('close', () => r.destroy());
    });
    up.on('error', (e) => {
      if (e.code === 'ECONNREFUSED') {
        u.downUntil = Date.now() + DOWN_MS;
        return forward(req, res, body, tried);
      }
      json(res, 502, { error: `the api replica on port ${u.port} failed: ${e.code ?? e.message}`, code: 'bad_gateway' });
    });
    up.end(body);
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        json(res, 413, { error: `request body over ${MAX_BODY} bytes`, code: 'payload_too_large' });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => forward(req, res, Buffer.concat(chunks), new Set()));
    req.on('error', () => res.destroy());
  });
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      resolve({
        url: `http://${host}:${server.address().port}`,
        port: server.address().port,
        close: () =>
          new Promise((r) => {
            server.closeAllConnections?.();
            server.close(() => r());
            agent.destroy();
          }),
      });
    });
  });
}

module.exports = { startRoundRobin };

// As a command (the `cluster` profile of docker compose): node scripts/lib/round-robin.js <host:port> <upstream host:port>…
if (require.main === module) {
  const [listen, ...ups] = process.argv.slice(2);
  const split = (hp) => {
    const i = hp.lastIndexOf(':');
    return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
  };
  if (!listen || !ups.length) {
    process.stderr.write('usage: node scripts/lib/round-robin.js <listen host:port> <upstream host:port>…\n');
    process.exit(2);
  }
  startRoundRobin({ ...split(listen), upstreams: ups.map(split) }).then((p) => process.stderr.write(`round-robin on ${p.url} over ${ups.join(', ')}\n`));
  process.on('SIGTERM', () => process.exit(0));
}
