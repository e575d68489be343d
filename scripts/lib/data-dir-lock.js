'use strict';
// One `npm start` (and one `npm run cluster`) per DATA_DIR: a second one would stop the first one's nats-server
// (npm start takes the store for a left-over) or run its own nodes on the same JetStream stores (cluster), and share
// its embedded Postgres. A pid file in the directory names the one running.
const fs = require('node:fs');
const path = require('node:path');

const OWNERS = { 'start.js': 'npm start', 'cluster.js': 'npm run cluster' };

function pidIn(file) {
  try {
    return Number(fs.readFileSync(file, 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/** What live process `pid` is, `npm start` or `npm run cluster` (scripts/start.js, scripts/cluster.js); undefined for anything else. */
function ownerName(pid) {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const script = args.find((arg) => path.basename(path.dirname(arg)) === 'scripts' && OWNERS[path.basename(arg)]);
    return script && OWNERS[path.basename(script)];
  } catch {
    return undefined;
  }
}

/** The pid of the `npm start` running with `dataDir`, or undefined. */
function npmStartOf(dataDir) {
  const pid = pidIn(path.join(dataDir, 'npm-start.pid'));
  return pid && ownerName(pid) === 'npm start' ? pid : undefined;
}

/**
 * Claims `dir` for this process (`file`: its pid file there), or throws naming the process that holds it (`dataDir`:
 * the DATA_DIR to name; `hint`: what to do instead). A file left by one that was killed is taken over. Returns the
 * release, which removes the file while it is still ours.
 */
function claimDataDir(dir, { file = 'npm-start.pid', dataDir = dir, hint = 'join it with npm run start:api|start:runner|start:delivery, or give this one another DATA_DIR' } = {}) {
  const pidFile = path.join(dir, file);
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(pidFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return async () => {
        if (pidIn(pidFile) === process.pid) fs.rmSync(pidFile, { force: true });
      };
    } catch (e) {
      if (e.code !== 'EEXIST' || attempt === 2) throw e;
    }
    const holder = pidIn(pidFile);
    const name = holder && holder !== process.pid ? ownerName(holder) : undefined;
    if (name) throw new Error(`another ${name} (pid ${holder}) is running with DATA_DIR ${dataDir}: stop it first, ${hint}`);
    fs.rmSync(pidFile, { force: true });
  }
}

module.exports = { claimDataDir, npmStartOf };
