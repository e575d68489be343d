'use strict';
// The webhook receiver every end-to-end benchmark posts to, for this project and
// its peers alike: records when each event (its body's `n`) first arrived, counts
// duplicates, and checks a sample of Standard Webhooks signatures when given a secret.
const http = require('node:http');
const { Webhook } = require('standardwebhooks');

async function startReceiver() {
  const r = { receipts: new Map(), emittedAt: new Map(), ever: new Set(), duplicates: 0, verified: 0, bad: 0, url: '', verifier: undefined };
  let seen = 0;
  r.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      if (r.verifier && seen++ % 20 === 0) {
        try {
          r.verifier.verify(body, req.headers);
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
      if (typeof parsed.n === 'number') {
        r.ever.add(parsed.n);
        if (r.receipts.has(parsed.n)) r.duplicates++;
        else {
          r.receipts.set(parsed.n, at);
          // This project's event id starts with the emit time (`<epoch_ms>-<seq>`): where an event's time went.
          const emittedAt = Number(String(req.headers['x-pd-event-id'] ?? '').split('-')[0]);
          if (emittedAt) r.emittedAt.set(parsed.n, emittedAt);
        }
      }
      res.writeHead(200).end();
    });
  });
  r.server.keepAliveTimeout = 30_000;
  // Connections opened to it: a sender that does not keep its connections alive costs the receiver more per event.
  r.connections = 0;
  r.server.on('connection', () => r.connections++);
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
    r.server.closeAllConnections();
    return new Promise((resolve) => r.server.close(() => resolve()));
  };
  await new Promise((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${r.server.address().port}/hook`;
  return r;
}

module.exports = { startReceiver };
