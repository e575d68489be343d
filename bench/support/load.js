'use strict';
// The load generator every end-to-end benchmark uses, for this project and its
// peers alike: POSTs of a small JSON body (`{ n, t, pad }`, BODY_BYTES long) over
// keep-alive connections. `closedLoop` keeps N requests in flight for a time;
// `openLoop` offers a fixed rate whatever the answers. A 429 is counted and
// its Retry-After obeyed by that connection (closed loop) before it sends again.
const { benchHttpClient } = require('./http-client');

const BODY_BYTES = 200;

/** The request body: `n` numbers the request, `t` is when it was sent (ms), padded to BODY_BYTES. */
function bodyOf(n, t) {
  const head = JSON.stringify({ n, t, pad: '' });
  return JSON.stringify({ n, t, pad: 'x'.repeat(Math.max(0, BODY_BYTES - head.length)) });
}

function newStats() {
  return { sent: 0, accepted: 0, rejected: 0, failed: 0, acceptedN: new Map(), startedAt: Date.now(), endedAt: 0 };
}

function count(stats, n, t, res) {
  stats.sent++;
  if (res.status >= 200 && res.status < 300) {
    stats.accepted++;
    stats.acceptedN.set(n, t);
  } else if (res.status === 429) stats.rejected++;
  else stats.failed++;
}

/**
 * `connections` requests in flight for `seconds` (or until `requests` were sent),
 * spread over `urls` round-robin. Returns counts and, per accepted request number,
 * when it was sent.
 */
async function closedLoop({ urls, connections = 32, seconds = 15, requests = Infinity, firstN = 0 }) {
  const client = benchHttpClient(connections);
  const stats = newStats();
  const end = Date.now() + seconds * 1000;
  let i = 0;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (Date.now() < end && i < requests) {
      const n = firstN + i;
      const url = urls[i++ % urls.length];
      const t = Date.now();
      const res = await client.post(url, bodyOf(n, t));
      count(stats, n, t, res);
      if (res.status === 429) await new Promise((r) => setTimeout(r, Math.min(Math.max(res.retryAfter, 1) * 1000, end - Date.now())));
    }
  }));
  stats.endedAt = Date.now();
  client.destroy();
  return stats;
}

/**
 * `rate` requests per second for `seconds`, each sent on time whatever the previous answers; `sendLagMs` says, per
 * request number, how late it left against its schedule (the generator's own process was not running meanwhile).
 */
async function openLoop({ urls, rate, seconds, firstN = 0, connections = 256 }) {
  const client = benchHttpClient(connections);
  const stats = { ...newStats(), sendLagMs: new Map() };
  const total = Math.round(rate * seconds);
  const t0 = Date.now();
  const pending = [];
  for (let i = 0; i < total; i++) {
    const wait = t0 + (i * 1000) / rate - Date.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const n = firstN + i;
    const t = Date.now();
    stats.sendLagMs.set(n, t - (t0 + (i * 1000) / rate));
    pending.push(client.post(urls[i % urls.length], bodyOf(n, t)).then((res) => count(stats, n, t, res)));
  }
  await Promise.all(pending);
  stats.endedAt = Date.now();
  client.destroy();
  return stats;
}

module.exports = { BODY_BYTES, bodyOf, closedLoop, openLoop };
