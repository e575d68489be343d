#!/usr/bin/env node
'use strict';
// Prints the configuration table for the README from the settings declared in libs/config.
const { SETTINGS } = require('../dist/libs/config/src/config.js');
const rows = Object.values(SETTINGS).map((s) => `| \`${s.env}\` | ${s.default === undefined ? '—' : `\`${s.default}\``} | ${s.doc} |`);
process.stdout.write(['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n') + '\n');
