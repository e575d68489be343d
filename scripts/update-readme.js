#!/usr/bin/env node
'use strict';
// Rewrites the configuration table in README.md from the settings declared in libs/config (run after `npm run build`).
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const file = path.join(__dirname, '..', 'README.md');
const table = execFileSync(process.execPath, [path.join(__dirname, 'config-table.js')], { encoding: 'utf8' });
const text = fs.readFileSync(file, 'utf8').replace(/(<!-- config-table:start -->\n)[\s\S]*?(<!-- config-table:end -->)/, `$1${table}$2`);
fs.writeFileSync(file, text);
