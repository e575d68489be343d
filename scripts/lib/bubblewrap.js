'use strict';
// The per-account sandboxes (docs/sandbox.md) need bubblewrap. `npm start`, `npm test` and
// `npm run bench` install it from Debian's packages when it is missing and they run as root;
// otherwise they say how to get it (the apps themselves refuse to start without it unless
// SANDBOX_ISOLATION=none).
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');

const log = (msg) => process.stderr.write(`${msg}\n`);

function hasBwrap() {
  return ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'].some((p) => fs.existsSync(p)) || spawnSync('sh', ['-c', 'command -v bwrap']).status === 0;
}

function ensureBubblewrap(env = process.env) {
  if (env.SANDBOX_ISOLATION === 'none' || hasBwrap()) return;
  const root = process.getuid?.() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get']).status === 0;
  if (!root || !apt) {
    log('bubblewrap (bwrap) is missing: install it (apt-get install bubblewrap, dnf install bubblewrap, …) or set SANDBOX_ISOLATION=none for one trusted team');
    return;
  }
  log('installing bubblewrap (apt-get install bubblewrap) for the component sandboxes…');
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const install = update.status === 0 && spawnSync('apt-get', ['install', '-y', '-qq', 'bubblewrap'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (!install || install.status !== 0 || !hasBwrap()) log('installing bubblewrap failed: the apps will refuse to start with SANDBOX_ISOLATION=namespaces');
}

module.exports = { ensureBubblewrap };
