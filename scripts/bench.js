#!/usr/bin/env node
'use strict';
// `npm run bench [-- <filter>…]`: builds, gives the run its own Postgres template
// database and authenticated nats-server (like `npm test`), then runs every benchmark file
// whose path contains one of the filters (all when none), one after the other:
// `bench/*.bench.js`, `apps/*/bench/*.bench.js`, and the compiled TypeScript
// ones, `dist/{apps,libs}/*/bench/*.bench.js`. Each prints its figures.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { ensureBuilt, log } = require('./lib/infra');
const { ensureBubblewrap } = require('./lib/bubblewrap');
const { startIsolatedRun } = require('./lib/isolated-run');

const root = path.join(__dirname, '..');

function benchFiles() {
  const dirs = [path.join(root, 'bench')];
  const sub = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir).map((d) => path.join(dir, d, 'bench')) : []);
  dirs.push(...sub(path.join(root, 'apps')), ...sub(path.join(root, 'dist', 'apps')), ...sub(path.join(root, 'dist', 'libs')));
  const files = [];
  for (const d of dirs) {
    if (!fs.existsSync(d)) continue;
    for (const f of fs.readdirSync(d).sort()) if (f.endsWith('.bench.js')) files.push(path.join(d, f));
  }
  return files;
}

async function main() {
  // `--name value` pairs are options of the benchmarks (passed to each file); the other words are filters.
  const args = process.argv.slice(2);
  const filters = [];
  const options = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith('--')) options.push(args[i], ...(args[i + 1] !== undefined && !args[i + 1].startsWith('--') ? [args[++i]] : []));
    else filters.push(args[i]);
  }
  const files = benchFiles().filter((f) => !filters.length || filters.some((x) => path.relative(root, f).includes(x)));
  if (!files.length) {
    log(`no benchmark matches ${filters.join(' ') || '(any)'}`);
    process.exit(1);
  }
  ensureBuilt(root);
  ensureBubblewrap();
  const runId = `b${randomBytes(3).toString('hex')}`;
  const { env, finish } = await startIsolatedRun(root, runId);
  let failed = 0;
  try {
    for (const file of files) {
      log(`bench: ${path.relative(root, file)}`);
      const r = spawnSync(process.execPath, ['--expose-gc', file, ...options], { cwd: root, env, stdio: 'inherit' });
      if (r.status !== 0) failed++;
    }
  } finally {
    await finish();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  log(`npm run bench: ${e.message}`);
  process.exit(1);
});
