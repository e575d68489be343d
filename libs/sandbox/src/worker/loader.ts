import { readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { getHeapStatistics } from 'node:v8';
import { Script } from 'node:vm';
import type { BundleRef } from '../worker-protocol';
import { parseBareSpecifier, PLATFORM_PACKAGE, stripPin } from '../specifiers';
import { runSync, withTimeout } from './run-sync';
import { registerBundle, setWrapperOffset } from './stack-map';

/** The object a component module exports (`module.exports` or `export default`). */
export type ComponentDefinition = Record<string, unknown>;

export interface LoadedComponent {
  definition: ComponentDefinition;
  format: 'cjs' | 'esm';
}

const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {';
setWrapperOffset(WRAPPER_HEAD.length);
const MAX_CACHED = 500;
const cache = new Map<string, LoadedComponent>();
/** Dependency directories whose modules this worker loaded (to unload them under memory pressure). */
const depsDirs = new Set<string>();
const HEAP_TRIM_RATIO = 0.7;
const TRIM_CHECK_EVERY = 4;
let tasksSinceCheck = 0;
let heapCapBytes = 0;

/** The old-generation cap the pool gave this worker (resourceLimits), in MB. */
export function setHeapCapMb(mb: number): void {
  heapCapBytes = mb * 1024 * 1024;
}

/**
 * Called after each task: when the heap is above 70 % of its cap, forget the
 * loaded components and their npm modules so that the garbage collector can
 * reclaim them (they are loaded again on next use), before the cap kills the worker.
 */
export function trimIfHeapHigh(): boolean {
  if (++tasksSinceCheck < TRIM_CHECK_EVERY) return false;
  tasksSinceCheck = 0;
  const h = getHeapStatistics();
  const cap = heapCapBytes || h.heap_size_limit;
  if (h.used_heap_size < cap * HEAP_TRIM_RATIO) return false;
  cache.clear();
  for (const key of Object.keys(require.cache)) {
    for (const dir of depsDirs) {
      if (key.startsWith(dir)) {
        delete require.cache[key];
        break;
      }
    }
  }
  depsDirs.clear();
  return true;
}
let platformRequire: NodeRequire = require;

export function setPlatformRequireFrom(file: string): void {
  platformRequire = createRequire(file);
}

function notFound(spec: string): Error {
  const e = new Error(`Cannot find module '${spec}': it is not installed for this component`) as NodeJS.ErrnoException;
  e.code = 'MODULE_NOT_FOUND';
  return e;
}

/** Namespaces of npm ES modules imported before their component's top-level code ran (file → namespace). */
const esmNamespaces = new Map<string, unknown>();
/** Node's own `import()` (TypeScript's CommonJS output would turn a plain `import()` into `require`). */
const nativeImport = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
const packageTypes = new Map<string, string | undefined>();

/** True when Node loads `file` as an ES module (`.mjs`, or `.js` under a package.json with `"type": "module"`). */
function isEsmFile(file: string): boolean {
  if (file.endsWith('.mjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    if (!packageTypes.has(dir)) {
      try {
        packageTypes.set(dir, (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string }).type ?? 'commonjs');
      } catch {
        packageTypes.set(dir, undefined);
      }
    }
    const type = packageTypes.get(dir);
    if (type !== undefined) return type === 'module';
  }
  return false;
}

/**
 * npm packages that are ES modules are imported with Node's own `import()` before the
 * component's code runs, as Node evaluates a module's imports before its body: so an ES
 * module graph with top-level `await` loads (`require()` of it would throw
 * ERR_REQUIRE_ASYNC_MODULE), and `require` then hands out the same namespace.
 */
async function importEsmDependencies(text: string, depsDir: string | undefined): Promise<void> {
  if (!depsDir) return;
  const fromDeps = createRequire(join(depsDir, 'package.json'));
  const specs = new Set<string>();
  for (const m of text.matchAll(/\brequire\("([^"\n]+)"\)/g)) specs.add(m[1]);
  for (const spec of specs) {
    const bare = parseBareSpecifier(spec);
    if (!bare || bare.builtin) continue;
    let file: string;
    try {
      file = fromDeps.resolve(stripPin(bare));
    } catch {
      continue;
    }
    if (esmNamespaces.has(file) || !isEsmFile(file)) continue;
    esmNamespaces.set(file, await nativeImport(pathToFileURL(file).href));
  }
}

/** `require` for a bundle: pins stripped, packages from the component's dependency set, builtins, `@pipedream/platform`. */
function componentRequire(depsDir: string | undefined): (spec: string) => unknown {
  const fromDeps = depsDir ? createRequire(join(depsDir, 'package.json')) : undefined;
  return (spec: string) => {
    const bare = parseBareSpecifier(spec);
    if (!bare) throw notFound(spec);
    if (bare.builtin) return require(bare.name.startsWith('node:') ? bare.name : bare.name + bare.subpath);
    const target = stripPin(bare);
    if (fromDeps) {
      try {
        if (esmNamespaces.size) {
          const file = fromDeps.resolve(target);
          if (esmNamespaces.has(file)) return esmNamespaces.get(file);
        }
        return fromDeps(target);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        const missing = code === 'MODULE_NOT_FOUND' && String((e as Error).message).includes(`'${target}'`);
        if (!missing || bare.name !== PLATFORM_PACKAGE) throw e;
      }
    }
    if (bare.name === PLATFORM_PACKAGE) return platformRequire(target);
    throw notFound(spec);
  };
}

/** Bundles are content-addressed (`<sha256 prefix>.cjs`): a file whose content does not match its name is refused. */
function verifyBundle(path: string, text: string): void {
  const expected = basename(path, '.cjs');
  if (!/^[0-9a-f]{32}$/.test(expected)) return;
  if (createHash('sha256').update(text).digest('hex').slice(0, 32) !== expected) {
    throw Object.assign(new Error(`the component bundle ${expected} does not match its hash: refused`), { name: 'IntegrityError' });
  }
}

/** Loads (once per worker) and returns a component's exported definition. Top-level code runs under the timeout. */
export async function loadComponent(ref: BundleRef, timeoutMs: number): Promise<LoadedComponent> {
  const hit = cache.get(ref.key);
  if (hit) return hit;
  const started = Date.now();
  const text = readFileSync(ref.path, 'utf8');
  verifyBundle(ref.path, text);
  await importEsmDependencies(text, ref.depsDir);
  const wrapper = new Script(`${WRAPPER_HEAD}${text}\n})`, { filename: ref.path });
  registerBundle(ref.path);
  const fn = wrapper.runInThisContext() as (e: unknown, r: unknown, m: unknown, f: string, d: string) => unknown;
  const mod: { exports: unknown } = { exports: {} };
  const req = componentRequire(ref.depsDir);
  if (ref.depsDir) depsDirs.add(realpathSync(ref.depsDir));
  const body = runSync(() => fn.call(mod.exports, mod.exports, req, mod, ref.path, dirname(ref.path)), timeoutMs, 'loading the component');
  // A module body with top-level `await` (compiled by the bundler to an async body) returns a promise.
  if (body instanceof Promise) await withTimeout(body, timeoutMs - (Date.now() - started), 'loading the component (top-level await)', timeoutMs);
  let exp = mod.exports as Record<string, unknown> | null;
  if (exp && typeof exp === 'object' && exp.__esModule && 'default' in exp) exp = exp.default as Record<string, unknown> | null;
  if (!exp || (typeof exp !== 'object' && typeof exp !== 'function')) {
    throw new TypeError('the component module must export an object (module.exports = {...} or export default {...})');
  }
  const loaded: LoadedComponent = { definition: exp as ComponentDefinition, format: ref.format };
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
  cache.set(ref.key, loaded);
  return loaded;
}
