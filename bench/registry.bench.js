'use strict';
// Compatibility sweep over Pipedream's registry:
//   `npm run bench -- registry [--packages a,b] [--components <dir>] [--sample n] [--apps a,b] [--limit n] [--lanes n]`.
//
// Each source component is bundled the way `pd deploy` bundles (local imports inlined, npm packages
// external), saved with POST /v1/components, and deployed with POST /v1/sources with plausible prop
// values and a placeholder `$auth`. The machine is offline but for package registries, so hooks that
// call the app's own API fail on the network: that counts as compatible. Sources come from:
//   - the `@pipedream/*` app packages on the npm registry (bench/registry-packages.txt, or --packages),
//     each fetched with `npm pack` — they carry their app's sources as Pipedream publishes them;
//   - with --components <dir>, a local copy of Pipedream's `components` folder (`<dir>/<app>/sources/…`);
//     each app folder is copied to a temporary folder first, so the folder given is only read.
// The placeholder account is shaped per app by the `$auth` fields its code reads (support/placeholder-auth.js);
// a source whose hooks fail with its optional props left out is deployed once more with them filled in.
// `configurable_props` is compared with the props Node itself sees when it imports the source
// (a child process per app, with the app's npm dependencies installed beside it).
// Prints the outcome table and percentages.
// Selecting apps (the whole repository takes hours): `--sample n` takes every n-th app, sorted by name, of
// those with sources (the 1st, the n+1-th, …), so the same n picks the same apps on every run; `--apps a,b`
// takes only the named apps (folder names with --components, package names otherwise), to re-run them
// after a fix. `--limit n` stops after n sources.
// Apps are swept `--lanes n` at a time (3), each lane as its own account (so its own sandbox process and
// threads): an app waits only while the runner has more than a few tasks per lane running or queued.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync, spawn } = require('node:child_process');
const { builtinModules } = require('node:module');
const { startSystem, createUser, api, scrape, total } = require('./support/system');
const { placeholderAuth, urlShapedAuth, codeFiles } = require('./support/placeholder-auth');

const ROOT = path.join(__dirname, '..');
const { bundleComponent } = require(path.join(ROOT, 'dist', 'apps', 'cli', 'src', 'bundle.js'));

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const HOOK_TIMEOUT_MS = 90_000;
const CONCURRENCY = Number(option('concurrency', '3'));
const LANES = Math.max(1, Number(option('lanes', '3')) || 3);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ess-registry-'));

/** Source files of an app folder: `sources/<name>/<file>` (JavaScript or TypeScript), shared `common` code left out. */
function sourceFiles(appDir) {
  const dir = path.join(appDir, 'sources');
  if (!fs.existsSync(dir)) return [];
  const out = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (name === 'common') continue;
    const sub = path.join(dir, name);
    if (!fs.statSync(sub).isDirectory()) continue;
    const code = fs.readdirSync(sub).filter((f) => /\.(mjs|js|ts)$/.test(f) && !f.endsWith('.d.ts'));
    // The source is `<name>/<name>.mjs` (or the folder's only module); other files are its helpers and test events.
    const entry = code.find((f) => f.replace(/\.(mjs|js|ts)$/, '') === name) ?? (code.length === 1 ? code[0] : undefined);
    if (entry) out.push(path.join(sub, entry));
  }
  return out;
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || r.stdout || '').slice(-800)}`);
  return r.stdout;
}

/** `npm pack` of an app package, unpacked; returns its folder. */
function fetchPackage(name) {
  const dir = path.join(work, name.replace(/[@/]/g, '_'));
  fs.mkdirSync(dir, { recursive: true });
  const file = run('npm', ['pack', name, '--silent', '--pack-destination', dir], { cwd: dir }).trim().split('\n').pop();
  run('tar', ['xzf', path.join(dir, file), '-C', dir]);
  return path.join(dir, 'package');
}

/**
 * A copy of a local app folder beside copies of the apps its code imports by relative path
 * (`../../../google_drive/…`), as in the components folder: its dependencies are installed in the copy,
 * never in the folder given.
 */
function copyApp(app, root = path.dirname(app.dir), into = path.join(work, 'apps')) {
  const dir = path.join(into, app.name);
  if (fs.existsSync(dir)) return dir;
  fs.cpSync(app.dir, dir, { recursive: true, filter: (src) => path.basename(src) !== 'node_modules' });
  for (const file of codeFiles(app.dir)) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/from\s+["']((?:\.\.\/)+[^"']+)["']/g)) {
      const other = path.relative(root, path.resolve(path.dirname(file), m[1])).split(path.sep)[0];
      if (other && other !== '..' && other !== app.name && fs.existsSync(path.join(root, other))) copyApp({ name: other, dir: path.join(root, other) }, root, into);
    }
  }
  return dir;
}

const NPM_INSTALL = ['install', '--ignore-scripts', '--omit=dev', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'];

/**
 * Installs an app's dependencies beside its code (a copy), as its package.json lists them: builtins listed as
 * packages (`"fs": "^0.0.1-security"`, a placeholder on the npm registry) are dropped from it first, as Node
 * never loads them and npm cannot install the placeholder.
 */
function installDependencies(appDir) {
  const file = path.join(appDir, 'package.json');
  if (!fs.existsSync(file) || fs.existsSync(path.join(appDir, 'node_modules'))) return;
  try {
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const name of Object.keys(pkg.dependencies ?? {})) if (builtinModules.includes(name)) delete pkg.dependencies[name];
    fs.writeFileSync(file, JSON.stringify(pkg, null, 2));
  } catch {
    return;
  }
  spawnSync('npm', NPM_INSTALL, { cwd: appDir, encoding: 'utf8' });
}

/** A TypeScript source as Node can import it: bundled as `pd deploy` bundles it (types stripped, packages external), beside it. */
async function importable(file, appDir) {
  if (!file.endsWith('.ts')) return file;
  try {
    const { code, format } = await bundleComponent(file, appDir);
    const out = file.replace(/\.ts$/, format === 'esm' ? '.node-import.mjs' : '.node-import.cjs');
    fs.writeFileSync(out, code);
    return out;
  } catch {
    return file;
  }
}

/**
 * The props Node sees when it imports each source (ground truth for configurable_props). A package the
 * app's code imports without listing it in package.json (`moment`, `uuid`) is installed, and the import tried again.
 */
async function nodeProps(appDir, files) {
  if (!files.length) return {};
  installDependencies(appDir);
  const entries = new Map();
  for (const f of files) entries.set(f, await importable(f, appDir));
  let out = await importProps(appDir, [...entries.values()]);
  const missing = new Set(Object.values(out).map((v) => /Cannot find package '([^']+)'/.exec(v?.error ?? '')?.[1]).filter(Boolean));
  if (missing.size) {
    // Not `--omit=dev`: a TypeScript app lists `@pipedream/types` (whose `defineSource` its sources call) as a dev dependency.
    spawnSync('npm', [...NPM_INSTALL.filter((a) => a !== '--omit=dev'), '--no-save', ...missing], { cwd: appDir, encoding: 'utf8' });
    out = await importProps(appDir, [...entries.values()]);
  }
  return Object.fromEntries(files.map((f) => [f, out[entries.get(f)]]));
}

function importProps(appDir, files) {
  const script = `
    const out = {};
    for (const f of JSON.parse(process.argv[1])) {
      try {
        let m = await import(f);
        m = m.default ?? m;
        if (m && m.__esModule && m.default) m = m.default;
        const props = m && typeof m.props === 'object' && m.props ? m.props : {};
        out[f] = Object.keys(props).sort();
      } catch (e) { out[f] = { error: String(e && e.message || e).slice(0, 200) }; }
    }
    process.stdout.write(JSON.stringify(out));`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(files)], { cwd: appDir, stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    const t = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', () => {
      clearTimeout(t);
      try {
        resolve(JSON.parse(text));
      } catch {
        resolve({});
      }
    });
  });
}

function labelled(value) {
  return { label: String(value), value };
}

function optionValue(o) {
  return o !== null && typeof o === 'object' ? o.value : o;
}

/**
 * Plausible configured_props for a component's configurable_props (a user would pick these): app props
 * get `auth`; optional props are left out unless `withOptional` (then they get a value too), and so is
 * a timer with its own schedule (`static`), which Pipedream's forms do not show.
 */
function plausibleProps(props, auth, withOptional = false) {
  const out = {};
  for (const p of props) {
    if (['$.interface.http', '$.service.db', 'alert', '$.interface.apphook'].includes(p.type)) continue;
    if (p.static !== undefined) continue;
    if (p.type === 'app') {
      out[p.name] = { $auth: auth };
      continue;
    }
    if (p.default !== undefined) continue;
    if (p.optional && !withOptional) continue;
    const first = Array.isArray(p.options) && p.options.length ? optionValue(p.options[0]) : undefined;
    switch (p.type) {
      case '$.interface.timer':
        out[p.name] = { intervalSeconds: 900 };
        break;
      case 'boolean':
        out[p.name] = first ?? false;
        break;
      case 'integer':
        out[p.name] = first ?? (typeof p.min === 'number' ? p.min : 1);
        break;
      case 'string[]':
        out[p.name] = [first ?? 'placeholder'];
        break;
      case 'integer[]':
        out[p.name] = [first ?? 1];
        break;
      case 'boolean[]':
        out[p.name] = [first ?? false];
        break;
      case 'object':
      case 'http_request':
        out[p.name] = {};
        break;
      default:
        out[p.name] = first ?? 'placeholder';
    }
    // A `withLabel` prop is given the option as a form picks it: label and value (its code reads `.label`).
    if (p.withLabel) out[p.name] = { __lv: Array.isArray(out[p.name]) ? out[p.name].map(labelled) : labelled(out[p.name]) };
  }
  return out;
}

/**
 * Errors of hooks run offline with placeholder credentials: the network, or the app's API refusing placeholder input
 * (Google's gRPC clients: "Total timeout of API … exceeded 60000 milliseconds before any response was received").
 */
const OFFLINE = /before any response was received|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|socket hang up|fetch failed|getaddrinf|connect E|Request failed with status code|status code [45]\d\d|Unauthorized|Forbidden|invalid[_ ]?(token|auth|api key|credentials)|certificate|timeout of \d+ms exceeded|aborted|error occurred with our connection to/i;
// An app's handler of an axios error that reads `err.response.data` (or `.status`, `.statusText`: undefined when the
// request never got an answer), and the "Connection error." of SDKs generated by Stainless (Retell's) for the same.
const NETWORK_HANDLER = /Cannot read properties of undefined \(reading '(data|status|statusText)'\)|^Error: Connection error\.$/;
// Apps' retry wrappers that drop the error of a request that got no answer and say so: Mailchimp's
// (`status` defaults to 500, `err.response` is undefined) and Shopify's (no GraphQL error code, no extensions);
// pcloud-sdk-js turns a request with no answer into `{ result: 500, error: "Network Error" }`, and its retry of a
// 500 reads a variable it never declares (`apiServer`): the same ReferenceError in plain Node, offline.
const NETWORK_WRAPPED = /Unexpected error \(status code: 500\):\s*undefined\s*$|Unexpected error \(error code: undefined\):\s*\{\}\s*$|apiServer is not defined/;
// The app's own checks of the placeholder input (props left empty, an account that is not real).
const PLACEHOLDER_INPUT = /^ConfigurationError|Missing required parameters/;
const ADDITIONAL_PROPS_OFFLINE = 'additionalProps() failed on the network (offline)';
const ETARGET = 'npm install `ETARGET` for a pinned version';

/**
 * Sources that fail because of the repository itself, read one by one (bench/registry-upstream.txt: the source,
 * then why). Only a listed source that fails is counted so: one that passes is compatible like any other.
 */
function upstreamList() {
  const text = fs.readFileSync(path.join(__dirname, 'registry-upstream.txt'), 'utf8').replace(/#.*$/gm, '');
  return new Map(text.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => [l.split(/\s+/)[0], l.replace(/^\S+\s+/, '')]));
}

/** Whether the npm registry reached here has a version of `name` matching `range` (`npm view`, nothing installed; asked once per pair). */
const registryAnswers = new Map();
function registryHas(name, range) {
  const spec = `${name}@${range}`;
  if (!registryAnswers.has(spec)) {
    const r = spawnSync('npm', ['view', spec, 'version', '--json'], { encoding: 'utf8' });
    registryAnswers.set(spec, r.status === 0 && r.stdout.trim() !== '' && r.stdout.trim() !== '[]');
  }
  return registryAnswers.get(spec);
}

/**
 * Why a failed source is not the service's to fix, or undefined: a local import the repository lacks, a
 * version the npm registry reached here does not have (checked with `npm view`), an import Node itself refuses
 * (the same source imported by plain Node beside it), or a reason read by hand (bench/registry-upstream.txt).
 */
function notOurs(r, listed) {
  if (r.outcome === 'ok' || r.outcome === ADDITIONAL_PROPS_OFFLINE) return undefined;
  if (r.outcome === 'not bundlable (local import missing)') return ['repository', 'a local import missing from the repository'];
  if (r.outcome === ETARGET) {
    const m = /no version of (\S+) matching "([^"]*)"/.exec(r.detail);
    if (m && !registryHas(m[1], m[2])) return ['registry', `npm view finds no version of ${m[1]} matching "${m[2]}"`];
  }
  if (r.truthError && !/Cannot find package|not imported by Node here/.test(r.truthError)) return ['repository', `plain Node refuses the import too: ${r.truthError}`];
  const why = listed.get(r.source);
  return why ? ['repository', why] : undefined;
}

function classifySave(res) {
  const m = res.body?.error ?? JSON.stringify(res.body);
  if (/default is allowed on optional props only/.test(m)) return ['save refused: `default` on a required prop', m];
  if (/apphook/.test(m)) return ['save refused: `$.interface.apphook` unsupported', m];
  if (/ETARGET|no version of .* matching/.test(m)) return [ETARGET, m];
  if (/top-level await|ERR_REQUIRE_ASYNC_MODULE/.test(m)) return ['top-level `await` in an ESM module graph', m];
  if (/DependencyInstallError|npm install failed/.test(m)) return ['save refused: npm install failed', m];
  return ['save refused: other', m];
}

const HOOK_FAILED = 'hook failed (not network)';

/**
 * SDKs whose error for a request that got no answer carries no message, checked one by one with plain Node
 * offline (`<name>: undefined` here): mailgun.js 3 (the `^3.5.2` of Mailgun's package.json) and Coinbase's CDP SDK.
 */
const MESSAGELESS_OFFLINE = { mailgun: /^Error: undefined$/, coinbase_developer_platform: /^APIError: undefined$/ };

function classifyHookError(e, app) {
  const text = `${e?.name ?? ''}: ${e?.message ?? ''}`;
  if (MESSAGELESS_OFFLINE[app]?.test(text)) return undefined;
  if (/TimeoutError/.test(text)) return 'hooks unfinished after 90 s';
  if (/WebSocket is not defined/.test(text)) return 'no global `WebSocket`';
  if (/ERR_REQUIRE_ASYNC_MODULE|top-level await/.test(text)) return 'top-level `await` in an ESM module graph';
  if (OFFLINE.test(text) || NETWORK_HANDLER.test(text) || NETWORK_WRAPPED.test(text) || PLACEHOLDER_INPUT.test(text)) return undefined;
  return HOOK_FAILED;
}

/** Deploys a saved component as a form would: the props additionalProps() adds for the values chosen get plausible values too. */
async function deploy(client, componentId, props, auth, withOptional) {
  const reloaded = await client.post(`/components/${componentId}/props/reload`, { configured_props: plausibleProps(props, auth, withOptional) });
  const all = reloaded.status === 200 ? reloaded.body.data.configurable_props : props;
  return client.post('/sources', { component_id: componentId, configured_props: plausibleProps(all, auth, withOptional) });
}

/**
 * The first error of a source's hooks that is not an offline effect: [outcome, detail], or undefined.
 * A hook's `$errors` event has no `original_event`; one with an event is a run's (a timer's first slot
 * may fall within the sweep, at a random phase), which the sweep does not read: after a hook failed
 * offline, the run fails on the state the hook never stored.
 */
async function hookFailure(client, sourceId, app) {
  const errs = await client.get(`/sources/${sourceId}/event_summaries?event_name=%24errors&expand=event&limit=20`);
  const hooks = (errs.body?.data ?? []).filter((s) => s.event?.original_event === null || s.event?.original_event === undefined);
  const bad = hooks.map((s) => [classifyHookError(s.event?.error, app), s.event?.error]).find(([c]) => c);
  return bad ? [bad[0], `${bad[1]?.name}: ${bad[1]?.message}`.slice(0, 200)] : undefined;
}

/** Runs `fn(item, index, lane)` over the items, `n` at a time; `lane` (0 … n-1) is the worker running it. */
async function pool(items, n, fn) {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async (_, lane) => {
      while (i < items.length) {
        const k = i++;
        await fn(items[k], k, lane);
      }
    }),
  );
}

/**
 * Saves a component as a user would: a save whose npm install outlasted COMPONENT_READ_TIMEOUT_MS (a large SDK
 * on a loaded machine) is tried again after the install, which goes on, has had time (docs/api.md).
 */
async function save(client, code) {
  for (let attempt = 1; ; attempt++) {
    const saved = await client.post('/components', { component_code: code });
    if (saved.status === 200 || attempt === 3 || !/reading the component timed out/.test(saved.body?.error ?? '')) return saved;
    await new Promise((resolve) => setTimeout(resolve, 60_000));
  }
}

/** Bundles, saves and deploys one source; `r` gets its outcome when it is not deployed, its source id when it is. */
async function sweepSource(r, file, appDir, want, auth) {
  if (!Array.isArray(want)) r.truthError = want?.error ?? 'not imported by Node here (TypeScript, or the import timed out)';
  let code;
  try {
    code = (await bundleComponent(file, appDir)).code;
  } catch (e) {
    r.outcome = 'not bundlable (local import missing)';
    r.detail = e.message.slice(0, 200);
    return;
  }
  const saved = await save(r.client, code);
  if (saved.status !== 200) {
    [r.outcome, r.detail] = classifySave(saved);
    return;
  }
  const props = saved.body.data.configurable_props;
  r.propsExact = Array.isArray(want) && JSON.stringify(props.map((p) => p.name).sort()) === JSON.stringify(want);
  Object.assign(r, { componentId: saved.body.data.id, props, auth });
  const src = await deploy(r.client, r.componentId, props, auth, false);
  if (src.status !== 200) {
    const why = src.body?.error ?? '';
    r.outcome = /is not one of the options/.test(why)
      ? 'prop value refused against `options`'
      : /^additionalProps\(\) failed/.test(why) && OFFLINE.test(why)
        ? ADDITIONAL_PROPS_OFFLINE
        : 'deploy refused';
    r.detail = why || String(src.status);
    return;
  }
  r.sourceId = src.body.data.id;
}

/** Hooks run so far, and whether the runner still has work: a task in the sandbox or a job in a mailbox. */
async function runnerState(system) {
  const m = await scrape(system.ports.runner);
  return { hooks: total(m, 'runner_hooks_total'), busy: total(m, 'runner_sandbox_tasks') + total(m, 'runner_mailbox_depth') };
}

/**
 * Waits until the runner has run no hook for `quietMs` (or `capMs` passed); with `idle`, also until it has
 * nothing running or queued: a hook still retrying the app's API must end before its errors are read. Only
 * before reading (not between apps): the timers of the sources deployed keep the runner busy now and then.
 */
async function hooksSettle(system, quietMs, capMs, idle = false) {
  const start = Date.now();
  let last = (await runnerState(system)).hooks;
  let since = Date.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await runnerState(system);
    if (now.hooks !== last) {
      last = now.hooks;
      since = Date.now();
    }
    if ((Date.now() - since >= quietMs && !(idle && now.busy > 0)) || Date.now() - start >= capMs) return;
  }
}

/** Waits (at most `capMs`) until the runner has fewer than `n` tasks running or queued, before a lane starts its next app. */
async function runnerBelow(system, n, capMs) {
  const start = Date.now();
  while ((await runnerState(system)).busy >= n && Date.now() - start < capMs) await new Promise((r) => setTimeout(r, 500));
}

/**
 * A source whose hooks failed with its optional props left out is deployed again with them filled in,
 * as a user reading the error would: some sources need one of several optional props (AWS's
 * new-sns-messages: an existing topic or a new topic's name), which only their code says.
 */
async function retryWithOptional(system, failed) {
  if (!failed.length) return;
  await pool(failed, CONCURRENCY, async (r) => {
    const src = await deploy(r.client, r.componentId, r.props, /Invalid URL/.test(r.detail) ? urlShapedAuth(r.auth) : r.auth, true);
    if (src.status === 200) r.retryId = src.body.data.id;
  });
  await hooksSettle(system, 15_000, HOOK_TIMEOUT_MS + 10_000, true);
  for (const r of failed.filter((x) => x.retryId)) {
    if (await hookFailure(r.client, r.retryId, r.app)) continue;
    r.outcome = 'ok';
    r.withOptional = `${/Invalid URL/.test(r.detail) ? 'with a placeholder account of addresses and ' : ''}without its optional props: ${r.detail}`;
  }
}

async function main() {
  const started = Date.now();
  const componentsDir = option('components');
  const limit = Number(option('limit', '0')) || Infinity;
  const apps = [];
  if (componentsDir) {
    for (const app of fs.readdirSync(componentsDir).sort()) {
      const dir = path.join(componentsDir, app);
      if (fs.statSync(dir).isDirectory() && fs.existsSync(path.join(dir, 'sources'))) apps.push({ name: app, dir });
    }
  } else {
    const names = (option('packages') ?? fs.readFileSync(path.join(__dirname, 'registry-packages.txt'), 'utf8').replace(/#.*$/gm, ''))
      .split(/[\s,]+/)
      .filter(Boolean);
    // `--packages woocommerce` means Pipedream's package of that app.
    for (const name of names) apps.push({ name: name.startsWith('@') ? name : `@pipedream/${name}`, fetch: true });
  }
  const selected = selectApps(apps, option('apps'), Number(option('sample', '1')) || 1);
  // A few accounts deploy the whole registry: the per-account quotas (sources, saved code and npm installs a day) are off.
  const quotasOff = { SOURCES_MAX_PER_ACCOUNT: '0', COMPONENT_BYTES_PER_DAY_PER_ACCOUNT: '0', NPM_INSTALLS_PER_DAY_PER_ACCOUNT: '0' };
  const system = await startSystem({ RUN_TIMEOUT_MS: String(HOOK_TIMEOUT_MS), SANDBOX_THREADS_PER_ACCOUNT: '2', TIMER_MIN_INTERVAL_SECONDS: '60', ...quotasOff });
  const clients = Array.from({ length: LANES }, (_, lane) => api(system, createUser(system, `lane${lane}`).apiKey));
  const results = [];
  let count = 0;
  try {
    await pool(selected, LANES, async (app, _k, lane) => {
      if (count >= limit) return;
      await runnerBelow(system, 4 * LANES, HOOK_TIMEOUT_MS + 10_000);
      await sweepApp(app, clients[lane], path.join(work, `lane${lane}`));
    });
    // Late hooks (up to the 90 s timeout) report their errors too.
    await hooksSettle(system, 15_000, HOOK_TIMEOUT_MS + 10_000, true);
    for (const r of results.filter((x) => x.sourceId)) {
      const bad = await hookFailure(r.client, r.sourceId, r.app);
      if (bad) [r.outcome, r.detail] = bad;
      else r.outcome = 'ok';
    }
    await retryWithOptional(system, results.filter((r) => r.outcome === HOOK_FAILED));
  } finally {
    await system.stop();
  }

  /** Copies (or fetches) one app, reads its props as Node sees them, then saves and deploys each of its sources. */
  async function sweepApp(app, client, into) {
    let dir = app.dir;
    try {
      dir = app.fetch ? fetchPackage(app.name) : copyApp(app, path.dirname(app.dir), into);
    } catch (e) {
      console.log(`  ${app.name}: ${app.fetch ? 'npm pack' : 'copy'} failed: ${e.message.slice(0, 200)}`);
      return;
    }
    const files = sourceFiles(dir).slice(0, Math.max(0, limit - count));
    count += files.length;
    const auth = placeholderAuth(dir);
    const truth = await nodeProps(dir, files);
    await pool(files, CONCURRENCY, async (file) => {
      const r = { source: `${app.name}/${path.relative(dir, file)}`, app: app.name, outcome: undefined, detail: '', propsExact: false, client };
      results.push(r);
      await sweepSource(r, file, dir, truth[file], auth);
    });
    fs.rmSync(app.fetch ? path.dirname(dir) : into, { recursive: true, force: true });
    console.log(`  ${app.name}: ${files.length} sources (${Math.round((Date.now() - started) / 1000)} s)`);
  }
  const sampled = selected.length < apps.length ? `${selected.length} of ${apps.length} apps (${sampleNote(option('apps'), option('sample'))}) of ` : '';
  report(results, Date.now() - started, `${sampled}${componentsDir ? `components folder ${componentsDir}` : `${apps.length} @pipedream/* npm packages`}`);
}

/** The apps a run sweeps: those named with --apps, else every n-th of them sorted by name (all for n = 1). */
function selectApps(apps, named, every) {
  if (named) {
    const want = new Set(named.split(',').map((s) => s.trim()).filter(Boolean));
    return apps.filter((a) => want.has(a.name) || want.has(a.name.replace(/^@pipedream\//, '')));
  }
  const sorted = [...apps].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.filter((_, i) => i % every === 0);
}

function sampleNote(named, every) {
  return named ? `--apps ${named}` : `every ${every}th app by name`;
}

function report(results, ms, what) {
  const n = results.length;
  const pct = (k) => `${((100 * k) / Math.max(1, n)).toFixed(1)} %`;
  const byOutcome = new Map();
  for (const r of results) byOutcome.set(r.outcome, (byOutcome.get(r.outcome) ?? 0) + 1);
  // additionalProps() that calls the app's API fails offline as a hook would: compatible, as the issue counts network failures.
  const offlineProps = byOutcome.get(ADDITIONAL_PROPS_OFFLINE) ?? 0;
  const ok = (byOutcome.get('ok') ?? 0) + offlineProps;
  const exact = results.filter((r) => r.propsExact).length;
  // Only saved sources have props to compare: one that did not bundle or was refused is in its own row.
  const compared = results.filter((r) => r.componentId && !r.truthError).length;
  console.log(`\nregistry sweep: ${n} sources of ${what}, ${Math.round(ms / 1000)} s\n`);
  console.log('| outcome | sources |');
  console.log('|---|---|');
  console.log(`| compatible: deployed, hooks ran or failed only on the network / on placeholder input (or \`additionalProps()\` needed the network) | ${ok} (${pct(ok)}) |`);
  if (offlineProps) console.log(`| of which: \`additionalProps()\` needed the network (offline, so the deploy was refused) | ${offlineProps} |`);
  const withOptional = results.filter((r) => r.withOptional);
  if (withOptional.length) console.log(`| of which: hooks failed without optional props, ran with them filled in (and, after "Invalid URL", the account's fields as addresses) | ${withOptional.length} |`);
  const comparedPct = `${((100 * exact) / Math.max(1, compared)).toFixed(1)} %`;
  console.log(`| \`configurable_props\` exactly the component's own props (as Node imports it) | ${exact} of ${compared} compared (${comparedPct}); ${n - compared} not compared (not saved, or not imported by Node here) |`);
  for (const [k, v] of [...byOutcome].filter(([k]) => k !== 'ok' && k !== ADDITIONAL_PROPS_OFFLINE).sort((a, b) => b[1] - a[1])) console.log(`| ${k} | ${v} |`);
  const listed = upstreamList();
  const notes = results.filter((r) => r.outcome !== 'ok' && r.outcome !== ADDITIONAL_PROPS_OFFLINE).map((r) => Object.assign(r, { notOurs: notOurs(r, listed) }));
  const repository = notes.filter((r) => r.notOurs?.[0] === 'repository').length;
  const registry = notes.filter((r) => r.notOurs?.[0] === 'registry').length;
  const rest = n - repository - registry;
  console.log(`| of the rows above: broken in the repository itself (a local import missing, an import plain Node refuses, or read by hand: bench/registry-upstream.txt) | ${repository} |`);
  console.log(`| of the rows above: a pinned version the npm registry reached here does not have (\`npm view\`) | ${registry} |`);
  console.log(`| **compatible of the ${rest} sources neither broken in the repository nor missing from the registry here** | **${ok} (${((100 * ok) / Math.max(1, rest)).toFixed(1)} %)** |`);
  if (notes.length) {
    console.log('\nnot compatible:');
    for (const r of notes) console.log(`  ${r.source}: ${r.outcome} — ${r.detail}${r.notOurs ? ` [not the service's: ${r.notOurs[1]}]` : ''}`);
  }
  if (withOptional.length) {
    console.log('\ncompatible once optional props were filled in (after "Invalid URL" also the account\'s fields as addresses):');
    for (const r of withOptional) console.log(`  ${r.source}: ${r.withOptional}`);
  }
  const inexact = results.filter((r) => r.componentId && !r.propsExact && !r.truthError);
  if (inexact.length) console.log(`\nconfigurable_props differing from Node's import: ${inexact.map((r) => r.source).join(', ')}`);
  const truthErrors = results.filter((r) => r.truthError);
  if (truthErrors.length) console.log(`\nnot compared (Node itself cannot import them here): ${truthErrors.map((r) => `${r.source} (${r.truthError})`).join('; ')}`);
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => fs.rmSync(work, { recursive: true, force: true }));
