import type { Plugin } from 'esbuild';
import { BadRequestError } from '@app/contracts';
import { AddressPolicy, OutboundError, safeFetch, shownUrl } from '@app/net';
import { buildSurvivingCompilerDeath } from '@app/sandbox';
import { parseHttpUrl } from '../common/http-url';
import { Input, optionalString } from '../common/input';

const EXAMPLE_URL = 'https://example.com/source.mjs';

/**
 * `component_url` of a request, checked whenever it is given: also beside `component_code` (where it is kept as
 * metadata) or `component_id` (where it is not used), so that no request keeps or passes over a URL it would refuse alone.
 */
export function componentUrlParam(input: Input): string | undefined {
  const url = optionalString(input, 'component_url') || undefined;
  if (url !== undefined) parseHttpUrl(url, 'component_url', EXAMPLE_URL);
  return url;
}

/** Outbound policy and limits for fetching a component from `component_url`. */
export interface FetchPolicy {
  policy: AddressPolicy;
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  /** Most files one component may pull in through relative imports. */
  maxFiles: number;
  /** Whose lookups the fetches make (the namespace the component is saved in): no other account's answer them. */
  account: string;
}

/**
 * GET one file under the outbound address policy, with bounded redirects, a timeout and a size cap: its text and the
 * URL that answered it (after redirects, what its relative imports resolve against); undefined on 404.
 */
export async function fetchText(url: string, policy: FetchPolicy): Promise<{ text: string; url: string } | undefined> {
  try {
    const res = await safeFetch(url, { policy: policy.policy, timeoutMs: policy.timeoutMs, maxBytes: policy.maxBytes, maxRedirects: policy.maxRedirects, account: policy.account });
    if (res.status === 404) return undefined;
    if (res.status < 200 || res.status >= 300) throw new BadRequestError(`component_url: ${shownUrl(url)} answered ${res.status}`, { field: 'component_url' });
    return { text: res.body.toString('utf8'), url: res.url };
  } catch (e) {
    if (e instanceof OutboundError) throw new BadRequestError(`component_url: ${e.message}`, { field: 'component_url', reason: e.code });
    throw e;
  }
}

const RELATIVE = /^\.{1,2}\//;
const STATIC_IMPORT = /(?:^|[\s;])(?:import\s[^'"]*?from\s*|import\s*|export\s[^'"]*?from\s*|require\s*\(\s*)["'](\.{1,2}\/[^"']+)["']/m;

/** True when the code imports relative files (which must be fetched and bundled). */
export function hasRelativeImports(code: string): boolean {
  return STATIC_IMPORT.test(code);
}

/** ESM when the code has top-level import/export statements. */
export function looksLikeEsm(code: string): boolean {
  return /(^|\n)\s*(import\s[\s\S]*?from\s*["']|import\s*["']|export\s+(default|const|let|var|function|async|class|\{|\*))/.test(code);
}

const EXTENSIONS = ['', '.mjs', '.js', '.cjs', '.ts', '/index.mjs', '/index.js', '/index.ts'];

/** esbuild loader of a fetched file, by its extension (TypeScript components exist: `new-item-in-feed.ts`). */
function loaderOf(url: string): 'js' | 'ts' | 'json' {
  const path = new URL(url).pathname;
  if (/\.json$/i.test(path)) return 'json';
  return /\.(m|c)?ts$/i.test(path) ? 'ts' : 'js';
}

/**
 * A GitHub file page (`https://github.com/<owner>/<repo>/blob/<ref>/<path>`, the form Pipedream's docs pass as
 * `component_url`) → its raw file, so that the code and its relative imports are fetched, not the HTML page.
 */
export function rawFileUrl(url: URL): URL {
  const m = url.hostname === 'github.com' ? /^\/([^/]+)\/([^/]+)\/blob\/(.+)$/.exec(url.pathname) : null;
  return m ? new URL(`https://raw.githubusercontent.com/${m[1]}/${m[2]}/${m[3]}`) : url;
}

/**
 * An esbuild plugin that loads relative imports from the URL of the importing file (the one that answered it, after
 * redirects, as a browser resolves a module's imports); npm imports stay external.
 */
function urlImports(entryUrl: string, policy: FetchPolicy): Plugin {
  let files = 0;
  const answeredAt = new Map<string, string>();
  return {
    name: 'component-url',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return { path: entryUrl, namespace: 'url' };
        if (RELATIVE.test(args.path) && args.namespace === 'url') return { path: new URL(args.path, answeredAt.get(args.importer) ?? args.importer).href, namespace: 'url' };
        if (/^https?:\/\//.test(args.path)) throw new Error(`absolute URL imports are not supported: ${args.path}`);
        return { path: args.path, external: true };
      });
      b.onLoad({ filter: /.*/, namespace: 'url' }, async (args) => {
        for (const ext of EXTENSIONS) {
          if (++files > policy.maxFiles * EXTENSIONS.length) throw new Error(`more than ${policy.maxFiles} files`);
          const file = await fetchText(args.path + ext, policy);
          if (file === undefined) continue;
          answeredAt.set(args.path, file.url);
          return { contents: file.text, loader: loaderOf(args.path + ext) };
        }
        throw new Error(`${shownUrl(args.path)} not found (tried ${EXTENSIONS.filter(Boolean).join(', ')})`);
      });
    },
  };
}

/** A component fetched from its URL: the entry file as served, and a bundle when it imports relative files. */
export interface LoadedComponentUrl {
  code: string;
  bundle?: string;
}

/**
 * Fetches a component from its URL. The entry file is kept exactly as served
 * (the component's `code`); when it has relative imports, its module graph is
 * also bundled (esbuild, npm imports external, the entry's module format kept)
 * so the runner gets one file.
 */
export async function loadComponentUrl(rawUrl: string, policy: FetchPolicy): Promise<LoadedComponentUrl> {
  const url = rawFileUrl(parseHttpUrl(rawUrl, 'component_url', EXAMPLE_URL));
  const entry = (await fetchText(url.href, policy))?.text;
  if (entry === undefined) throw new BadRequestError(`component_url: ${shownUrl(url)} answered 404`, { field: 'component_url' });
  if (!hasRelativeImports(entry)) return { code: entry };
  try {
    const out = await buildSurvivingCompilerDeath({
      entryPoints: [url.href],
      bundle: true,
      write: false,
      platform: 'node',
      format: looksLikeEsm(entry) ? 'esm' : 'cjs',
      target: 'node20',
      logLevel: 'silent',
      plugins: [urlImports(url.href, policy)],
    }, `${url.href}\n${entry}`);
    return { code: entry, bundle: out.outputFiles[0].text };
  } catch (e) {
    if (e instanceof BadRequestError) throw e;
    const errors = (e as { errors?: { text: string }[] }).errors;
    throw new BadRequestError(`component_url: cannot bundle ${shownUrl(url)}: ${errors?.map((x) => x.text).join('; ') ?? (e as Error).message}`, { field: 'component_url' });
  }
}
