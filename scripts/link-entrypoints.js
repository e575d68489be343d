#!/usr/bin/env node
// tsc writes dist/apps/<app>/src/main.js; operators run `node dist/apps/<app>/main.js`.
const { writeFileSync, existsSync } = require('node:fs');
const { join } = require('node:path');
for (const app of ['api', 'runner', 'delivery']) {
  const dir = join(__dirname, '..', 'dist', 'apps', app);
  if (existsSync(join(dir, 'src', 'main.js'))) writeFileSync(join(dir, 'main.js'), "require('./src/main.js');\n");
}
