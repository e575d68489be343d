#!/usr/bin/env node
'use strict';
// `pd`: the command-line tool of the event source service. The TypeScript
// sources live in apps/cli/src and are compiled by `npm run build`.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const entry = join(root, 'dist', 'apps', 'cli', 'src', 'main.js');
if (!existsSync(entry)) {
  process.stderr.write(`pd: the CLI is not built yet: run \`npm run build\` in ${root}\n`);
  process.exit(1);
}
require(entry)
  .main(process.argv.slice(2))
  .then((code) => process.exit(code))
  .catch((e) => {
    process.stderr.write(`Error: ${e && e.message ? e.message : String(e)}\n`);
    process.exit(1);
  });
