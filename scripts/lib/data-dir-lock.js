'use strict';
// One `npm start` per DATA_DIR: a second one would stop the first one's nats-server (it takes the store
// for a left-over) and share its embedded Postgres. `<DATA_DIR>/npm-start.pid` names the one running.
const fs = require('node:fs');
const path = require('node:path');

function pidIn(file) {
  try {
    return Number(fs.readFileSync(file, 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a live `npm start` (scripts/start.js), not a process that reused the number. */
function isNpmStart(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((arg) => arg.endsWith(path.join('scripts', 'start.js')));
  } catch {
    return false;
  }
}

/** The pid of the `npm start` running with `dataDir`, or undefined. */
function npmStartOf(dataDir) {
  const pid = pidIn(path.join(dataDir, 'npm-start.pid'));
  return pid && isNpmStart(pid) ? pid : undefined;
}

/**
 * Claims `dataDir` for this process, or throws naming the `npm start` that holds it. A file left by one
 * that was killed is taken over. Returns the release, which removes the file while it is still ours.
 */
function claimDataDir(dataDir) {
  const file = path.join(dataDir, 'npm-start.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return async () => {
        if (pidIn(file) === process.pid) fs.rmSync(file, { force: true });
      };
    } catch (e) {
      if (e.code !== 'EEXIST' || attempt === 2) throw e;
    }
    const holder = npmStartOf(dataDir);
    if (holder && holder !== process.pid) {
      throw new Error(`another npm start (pid ${holder}) is running with DATA_DIR ${dataDir}: stop it first, join it with npm run start:api|start:runner|start:delivery, or give this one another DATA_DIR`);
    }
    fs.rmSync(file, { force: true });
  }
}

module.exports = { claimDataDir, npmStartOf };
