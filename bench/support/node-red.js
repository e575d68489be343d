'use strict';
// Node-RED 4 as the peer of the end-to-end benchmarks: installed from the npm
// registry into a temporary directory (nothing of it is committed), run with a flow
// of the same shape as the project's pipeline: `http in` (POST) → `function` (the
// body passed on, as a source's run emits it) → `http request` (POST to the
// receiver); the `http in` answers at once through an `http response` node.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { freePort } = require('./system');

const VERSION = '4';
const DIR = path.join(os.tmpdir(), `ess-bench-node-red-${VERSION}`);

/** Installs node-red@4 into a temporary directory (reused by later runs on this machine). */
function installNodeRed() {
  const red = path.join(DIR, 'node_modules', 'node-red', 'red.js');
  if (fs.existsSync(red)) return red;
  fs.mkdirSync(DIR, { recursive: true });
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', DIR, `node-red@${VERSION}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0 || !fs.existsSync(red)) throw new Error(`installing node-red@${VERSION} failed:\n${r.stderr}`);
  return red;
}

function version() {
  return JSON.parse(fs.readFileSync(path.join(DIR, 'node_modules', 'node-red', 'package.json'), 'utf8')).version;
}

/** One `http in` → function → `http request` chain per endpoint (`/in/<i>`), all posting to `receiverUrl`. */
function flowOf(endpoints, receiverUrl) {
  const nodes = [{ id: 'tab', type: 'tab', label: 'bench' }];
  for (let i = 0; i < endpoints; i++) {
    nodes.push(
      { id: `in${i}`, type: 'http in', z: 'tab', url: `/in/${i}`, method: 'post', upload: false, wires: [[`fn${i}`, `ok${i}`]] },
      { id: `ok${i}`, type: 'http response', z: 'tab', statusCode: '200', headers: {}, wires: [] },
      { id: `fn${i}`, type: 'function', z: 'tab', func: 'return { payload: msg.payload };', outputs: 1, wires: [[`out${i}`]] },
      { id: `out${i}`, type: 'http request', z: 'tab', method: 'POST', ret: 'txt', url: receiverUrl, paytoqs: 'ignore', wires: [[]] },
    );
  }
  return nodes;
}

/** Starts Node-RED with the benchmark flow; returns its endpoint URLs, pid and a stop function. */
async function startNodeRed({ endpoints, receiverUrl }) {
  const red = installNodeRed();
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ess-bench-node-red-run-'));
  const port = await freePort();
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(flowOf(endpoints, receiverUrl)));
  fs.writeFileSync(path.join(userDir, 'settings.js'), `module.exports = ${JSON.stringify({
    uiPort: port,
    uiHost: '127.0.0.1',
    flowFile: 'flows.json',
    httpAdminRoot: false,
    logging: { console: { level: 'warn', metrics: false, audit: false } },
    telemetry: { enabled: false },
    diagnostics: { enabled: false },
  })};\n`);
  const proc = spawn(process.execPath, [red, '--userDir', userDir, '--settings', path.join(userDir, 'settings.js')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  proc.stdout.on('data', (d) => (logs += d));
  proc.stderr.on('data', (d) => (logs += d));
  const urls = Array.from({ length: endpoints }, (_, i) => `http://127.0.0.1:${port}/in/${i}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`node-red exited:\n${logs}`);
    const res = await fetch(urls[0], { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":-1}' }).catch(() => undefined);
    if (res && res.status === 200) break;
    if (Date.now() > deadline) throw new Error(`node-red did not start:\n${logs}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    urls,
    pid: proc.pid,
    version: version(),
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      fs.rmSync(userDir, { recursive: true, force: true });
    },
  };
}

module.exports = { startNodeRed };
