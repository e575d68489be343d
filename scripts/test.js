#!/usr/bin/env node
'use strict';
// `npm test`: builds, gives this run its own Postgres template database and its
// own authenticated nats-server (so concurrent runs never collide), runs every
// jest test (unit, integration, end-to-end against the real services), then
// cleans up. A run whose apps were refused a publish or subscribe by NATS fails.
// Extra arguments go to jest: `npm test -- test/sources.e2e-spec.ts`.
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { ensureBuilt, log } = require('./lib/infra');
const { startIsolatedRun } = require('./lib/isolated-run');
const { ensureBubblewrap } = require('./lib/bubblewrap');
const { ensureChromium } = require('./lib/chromium');

const root = path.join(__dirname, '..');

async function main() {
  ensureBuilt(root);
  ensureBubblewrap();
  ensureChromium();
  const runId = randomBytes(4).toString('hex');
  // Users for more test systems than the suite starts (about 190 on 2026-12-01): none of them reloads the server. A
  // reload makes JetStream answer "no responders" for a moment to every test running then (a 503 from their api).
  const { env, finish } = await startIsolatedRun(root, runId, { spareInstallations: 400 });
  let status = 1;
  try {
    const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
    status = spawnSync(process.execPath, [jest, ...process.argv.slice(2)], { cwd: root, env, stdio: 'inherit' }).status ?? 1;
  } finally {
    const violations = await finish();
    if (violations.length && status === 0) status = 1;
  }
  process.exit(status);
}

main().catch((e) => {
  log(`npm test: ${e.message}`);
  process.exit(1);
});
