#!/usr/bin/env node
'use strict';
// `pd`: the command-line tool of the event source service. The TypeScript
// sources live in apps/cli/src and are compiled by `npm run build`.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const entry = join(root, 'dist', 'apps', 'cli', 'src', 'main.js');
if (!existsSync(entry)) {
  const steps = existsSync(join(root, 'node_modules')) ? 'npm run build' : 'npm ci && npm run build';
  process.stderr.write(`Error: the pd CLI is not built yet: run \`${steps}\` in ${root} (npm start also does it)\n`);
  process.exit(1);
}
const cli = require(entry);
// Exits once the output has left the process: `pd list sources --json | jq` gets all of it.
cli
  .main(process.argv.slice(2))
  .then(cli.exitAfterOutput)
  .catch((e) => {
    process.stderr.write(`Error: ${e && e.message ? e.message : String(e)}\n`);
    cli.exitAfterOutput(1);
  });
