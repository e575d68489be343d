import type { Plugin } from 'esbuild';
import { buildSurvivingCompilerDeath, CompilerStoppedError } from './esbuild-service';
import type { FetchText } from './types';
import { parseBareSpecifier, pinProblem } from './specifiers';
import { asyncModuleBody, withNodeImportRules } from './esm-interop';

/** A component compiled to one CommonJS file; npm imports stay external, as written. */
export interface BundleOutput {
  code: string;
  /** Source map of `code` (JSON), to show component lines in error stacks. */
  map?: string;
  format: 'cjs' | 'esm';
  /** Bare npm imports as written (`axios@0.19.2`, `lodash/get.js`), builtins excluded, sorted, unique. */
  dependencies: string[];
  /** True when relative imports were fetched from the base URL. */
  fetchedModules: number;
}

export class BundleError extends Error {
  override name = 'BundleError';
  /** The entry did not parse (worth a second try as TypeScript). */
  constructor(
    message: string,
    readonly syntax = false,
  ) {
    super(message);
  }
}

export interface BundleInput {
  code: string;
  baseUrl?: string;
  fetchText: FetchText;
  /** Caps for the fetched module graph. */
  maxModules?: number;
  maxTotalBytes?: number;
}

const HTTP_NS = 'component-url';
const STDIN = 'component.js';
const KNOWN_EXT = /\.(m?js|cjs|json|m?ts|cts)$/i;
const TS_EXT = /\.(m?ts|cts)$/i;

function loaderFor(url: string): 'js' | 'ts' | 'json' {
  const path = new URL(url).pathname;
  if (/\.json$/i.test(path)) return 'json';
  return TS_EXT.test(path) ? 'ts' : 'js';
}

/** Relative import candidates the way Node and Pipedream resolve extension-less paths. */
function candidates(url: string): string[] {
  if (KNOWN_EXT.test(new URL(url).pathname)) return [url];
  return [url, `${url}.js`, `${url}.mjs`, `${url}.cjs`, `${url}.json`, `${url}.ts`, `${url}.mts`, `${url}/index.js`, `${url}/index.mjs`, `${url}/index.ts`];
}

function componentPlugin(input: BundleInput, deps: Set<string>, counter: { modules: number; bytes: number }): Plugin {
  const maxModules = input.maxModules ?? 200;
  const maxBytes = input.maxTotalBytes ?? 10 * 1024 * 1024;
  const texts = new Map<string, string>();
  return {
    name: 'component',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        const spec = args.path;
        const bare = parseBareSpecifier(spec);
        const badPin = pinProblem(spec);
        if (badPin) return { errors: [{ text: badPin }] };
        if (bare) {
          if (bare.builtin) return { path: bare.name.startsWith('node:') ? bare.name : bare.name + bare.subpath, external: true };
          deps.add(spec);
          return { path: spec, external: true };
        }
        const fromUrl = args.namespace === HTTP_NS ? args.importer : input.baseUrl;
        if (!fromUrl) {
          return { errors: [{ text: `cannot resolve "${spec}": relative imports need the component's URL (component_url), or submit the component as one bundle` }] };
        }
        let base: URL;
        try {
          base = new URL(spec, fromUrl);
        } catch {
          return { errors: [{ text: `cannot resolve "${spec}" against ${fromUrl}` }] };
        }
        if (base.protocol !== 'http:' && base.protocol !== 'https:') {
          return { errors: [{ text: `cannot import "${spec}": only http(s) module URLs are fetched` }] };
        }
        for (const url of candidates(base.href)) {
          if (texts.has(url)) return { path: url, namespace: HTTP_NS };
          let text: string | null | undefined;
          try {
            text = await input.fetchText(url);
          } catch (e) {
            return { errors: [{ text: `fetching ${url} failed: ${(e as Error).message}` }] };
          }
          if (text === null || text === undefined) continue;
          counter.modules += 1;
          counter.bytes += Buffer.byteLength(text);
          if (counter.modules > maxModules) return { errors: [{ text: `component imports more than ${maxModules} modules` }] };
          if (counter.bytes > maxBytes) return { errors: [{ text: `component modules exceed ${maxBytes} bytes in total` }] };
          texts.set(url, text);
          return { path: url, namespace: HTTP_NS };
        }
        return { errors: [{ text: `cannot resolve "${spec}" from ${fromUrl}: not found (404)` }] };
      });
      b.onLoad({ filter: /.*/, namespace: HTTP_NS }, (args) => ({
        contents: texts.get(args.path) ?? '',
        loader: loaderFor(args.path),
      }));
    },
  };
}

/**
 * Compiles a component (CommonJS or ESM, JavaScript or TypeScript, one file or
 * a module graph under `baseUrl`) to one CommonJS file. TypeScript is chosen by
 * the URL's extension, or tried when the code does not parse as JavaScript.
 */
export async function bundleComponent(input: BundleInput): Promise<BundleOutput> {
  const byUrl = input.baseUrl && /^https?:/i.test(input.baseUrl) ? loaderFor(input.baseUrl) : 'js';
  const first = byUrl === 'json' ? 'js' : byUrl;
  try {
    return await bundleWith(input, first);
  } catch (e) {
    if (first === 'ts' || !(e instanceof BundleError) || !e.syntax) throw e;
    try {
      return await bundleWith(input, 'ts');
    } catch {
      throw e;
    }
  }
}

const TLA_IN_CJS = /Top-level await is currently not supported with the "cjs" output format/;

/**
 * One CommonJS file whose imports follow Node's rules; a module graph with top-level
 * `await` is compiled as an ES module and turned into an async body (the loader awaits it).
 */
async function bundleWith(input: BundleInput, loader: 'js' | 'ts'): Promise<BundleOutput> {
  try {
    const out = await bundleAs(input, loader, 'cjs');
    return { ...out, code: withNodeImportRules(out.code) };
  } catch (e) {
    if (!(e instanceof BundleError) || !TLA_IN_CJS.test(e.message)) throw e;
  }
  const out = await bundleAs(input, loader, 'esm');
  try {
    return { ...out, code: asyncModuleBody(out.code) };
  } catch (e) {
    throw new BundleError(`cannot compile the module with top-level await: ${(e as Error).message}`);
  }
}

async function bundleAs(input: BundleInput, loader: 'js' | 'ts', outFormat: 'cjs' | 'esm'): Promise<BundleOutput> {
  const deps = new Set<string>();
  const counter = { modules: 0, bytes: 0 };
  let result;
  try {
    const key = JSON.stringify([input.code, input.baseUrl ?? '', loader, outFormat]);
    result = await buildSurvivingCompilerDeath({
      stdin: { contents: input.code, sourcefile: STDIN, loader },
      bundle: true,
      write: false,
      format: outFormat,
      platform: 'node',
      target: 'node20',
      metafile: true,
      logLevel: 'silent',
      sourcemap: 'external',
      sourcesContent: false,
      outfile: 'component.cjs',
      plugins: [componentPlugin(input, deps, counter)],
    }, key);
  } catch (e) {
    if (e instanceof CompilerStoppedError) throw new BundleError(e.message);
    const errors = (e as { errors?: { text: string; pluginName?: string; location?: { line: number; column: number; file: string } | null }[] }).errors;
    const text = errors?.length
      ? errors
          .slice(0, 5)
          .map((x) => (x.location ? `${x.location.file === STDIN || x.location.file === '<stdin>' ? 'line' : `${x.location.file} line`} ${x.location.line}:${x.location.column}: ${x.text}` : x.text))
          .join('; ')
      : (e as Error).message;
    const syntax = !!errors?.length && errors.every((x) => !x.pluginName && x.location?.file === STDIN);
    throw new BundleError(text, syntax);
  }
  const input0 = Object.entries(result.metafile.inputs).find(([k]) => k === STDIN || k.endsWith(STDIN) || k === '<stdin>');
  const format = input0?.[1].format === 'esm' ? 'esm' : 'cjs';
  const js = result.outputFiles.find((f) => f.path.endsWith('.cjs'));
  const map = result.outputFiles.find((f) => f.path.endsWith('.map'));
  return {
    code: (js ?? result.outputFiles[0]).text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'),
    map: map?.text,
    format,
    dependencies: [...deps].sort(),
    fetchedModules: counter.modules,
  };
}

/** The default module fetcher: global fetch with a timeout, a size cap, no cookies. */
export function defaultFetchText(timeoutMs = 10_000, maxBytes = 5 * 1024 * 1024): FetchText {
  return async (url) => {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
    if (res.status === 404 || res.status === 410) {
      await res.body?.cancel();
      return null;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`HTTP ${res.status}`);
    }
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > maxBytes) {
      await res.body?.cancel();
      throw new Error(`module larger than ${maxBytes} bytes`);
    }
    const buf = Buffer.from(await res.arrayBuffer());
    if (buf.length > maxBytes) throw new Error(`module larger than ${maxBytes} bytes`);
    return buf.toString('utf8');
  };
}
