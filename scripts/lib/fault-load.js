'use strict';
// The fault suite's load and its witness: a steady stream of HTTP requests to many HTTP sources, each
// request carrying a unique marker, and a local webhook receiver that every source's events are sent to.
// What a sender saw (2xx or not, when) and what the receiver got (each marker, each time) are counted
// per fault phase.
const http = require('node:http');

const MARKER = /"m":"(f\d+-\d+)"/g;

/** A webhook receiver on 127.0.0.1: answers 200 at once and records every marker of every POST with its arrival time. */
function startReceiver() {
  const receipts = new Map();
  let posts = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      posts++;
      const now = Date.now();
      for (const m of Buffer.concat(chunks).toString('utf8').matchAll(MARKER)) {
        const list = receipts.get(m[1]);
        if (list) list.push(now);
        else receipts.set(m[1], [now]);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${server.address().port}/hook`,
        receipts,
        posts: () => posts,
        close: () => new Promise((r) => (server.closeAllConnections?.(), server.close(() => r()))),
      });
    });
  });
}

/**
 * Sends `rate` requests per second, round-robin over `endpoints`, until stop(); each body is
 * `{"m":"f<phase>-<n>"}`. Every request is recorded: `{ marker, sentAt, status, doneAt }` (status 0: no answer).
 */
function startLoad({ endpoints, rate, phase, timeoutMs = 10_000 }) {
  const requests = [];
  let n = 0;
  const inflight = new Set();
  const fire = () => {
    const marker = `f${phase}-${n}`;
    const url = endpoints[n % endpoints.length];
    n++;
    const r = { marker, sentAt: Date.now(), status: 0, doneAt: 0 };
    requests.push(r);
    const p = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ m: marker }), signal: AbortSignal.timeout(timeoutMs) })
      .then(async (res) => {
        await res.arrayBuffer();
        r.status = res.status;
      })
      .catch(() => {
        r.status = 0;
      })
      .finally(() => {
        r.doneAt = Date.now();
        inflight.delete(p);
      });
    inflight.add(p);
  };
  const timer = setInterval(fire, 1000 / rate);
  return {
    requests,
    /** Stops sending and resolves once every request has its answer (or timed out). */
    async stop() {
      clearInterval(timer);
      await Promise.all([...inflight]);
    },
  };
}

/**
 * The figures of one phase: `requests` of the load, `receiver` receipts, `summaries` (markers found in
 * event_summaries), `faultAt` (ms). Recovery: from the fault until the last failed request and the last
 * event delivered more than `lateMs` after its acknowledgement, whichever comes later (0: nothing noticed).
 */
function phaseFigures({ requests, receipts, summaries, faultAt, lateMs = 2000 }) {
  const acked = requests.filter((r) => r.status >= 200 && r.status < 300);
  const failed = requests.filter((r) => !(r.status >= 200 && r.status < 300));
  let delivered = 0;
  let duplicates = 0;
  let maxDelayMs = 0;
  let lastLate = 0;
  const lost = [];
  for (const r of acked) {
    const got = receipts.get(r.marker);
    if (!got) {
      lost.push(r.marker);
      continue;
    }
    delivered++;
    duplicates += got.length - 1;
    const delay = got[0] - r.doneAt;
    maxDelayMs = Math.max(maxDelayMs, delay);
    if (delay > lateMs) lastLate = Math.max(lastLate, got[0]);
  }
  // Requests the sender saw fail whose event still arrived (a retrying sender would send it twice).
  const failedButDelivered = failed.filter((r) => receipts.has(r.marker)).length;
  const ackedInSummaries = acked.filter((r) => summaries.has(r.marker)).length;
  const lastFailed = failed.reduce((t, r) => Math.max(t, r.doneAt), 0);
  const until = Math.max(lastFailed, lastLate);
  return {
    sent: requests.length,
    acked: acked.length,
    failed: failed.length,
    failedStatuses: [...new Set(failed.map((r) => r.status))].sort(),
    summaries: ackedInSummaries,
    delivered,
    lost,
    duplicates,
    failedButDelivered,
    maxDelayS: maxDelayMs / 1000,
    recoveryS: faultAt && until > faultAt ? (until - faultAt) / 1000 : 0,
  };
}

module.exports = { startReceiver, startLoad, phaseFigures };
