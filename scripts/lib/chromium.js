'use strict';
// The dashboard's browser tests (test/dashboard.e2e-spec.ts) and `npm run screenshots` drive a real
// Chromium with playwright-core. They use CHROMIUM_PATH or the usual locations; when none is there,
// `npm test` installs Debian's chromium package if it runs as root with apt-get (as CI does),
// like bubblewrap (scripts/lib/bubblewrap.js); otherwise it says how to get one.
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');

const log = (msg) => process.stderr.write(`${msg}\n`);
const LOCATIONS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable', '/snap/bin/chromium'];

/** The Chromium to drive: CHROMIUM_PATH when set, else the first usual location that exists. */
function findChromium(env = process.env) {
  if (env.CHROMIUM_PATH) return fs.existsSync(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
  return LOCATIONS.find((p) => fs.existsSync(p));
}

function ensureChromium(env = process.env) {
  if (findChromium(env)) return findChromium(env);
  if (env.CHROMIUM_PATH) {
    log(`CHROMIUM_PATH=${env.CHROMIUM_PATH} does not exist: the dashboard's browser tests will fail`);
    return undefined;
  }
  const root = process.getuid?.() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get']).status === 0;
  if (!root || !apt) {
    log('Chromium is missing: install it (apt-get install chromium, …) or set CHROMIUM_PATH; the dashboard browser tests need it');
    return undefined;
  }
  log('installing Chromium (apt-get install chromium) for the dashboard browser tests…');
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const install = update.status === 0 && spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (!install || install.status !== 0 || !findChromium(env)) log('installing Chromium failed: the dashboard browser tests will fail');
  return findChromium(env);
}

module.exports = { ensureChromium, findChromium };
