#!/usr/bin/env node
'use strict';
// `npm run screenshots`: runs the dashboard's browser journey (test/dashboard.e2e-spec.ts) against
// the real apps, as `npm test` does, and keeps the screenshots it takes of each page in
// docs/screenshots/ (the README and docs/dashboard.md show them): sign-in, new source, source detail
// and errors, sources (and on a phone, dark), webhooks, account, workflows, a workflow's failed run
// and its runs after a replay.
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const dir = path.join(root, 'docs', 'screenshots');
const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'test.js'), 'test/dashboard.e2e-spec.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, SCREENSHOTS_DIR: dir },
});
if (r.status === 0) process.stderr.write(`screenshots in ${path.relative(root, dir)}/\n`);
process.exit(r.status ?? 1);
