import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { basename, dirname, sep } from 'node:path';

/**
 * Error stacks point into the bundle file; this maps their frames back to the
 * component's own files and lines with the bundle's source map (loaded on the
 * first error of each bundle).
 */
const maps = new Map<string, SourceMap | null | undefined>();
/** Length of the wrapper the loader puts before the bundle's first line. */
let firstLineOffset = 0;

export function setWrapperOffset(columns: number): void {
  firstLineOffset = columns;
}

export function registerBundle(path: string): void {
  if (!maps.has(path)) maps.set(path, undefined);
}

function mapFor(path: string): SourceMap | null {
  let m = maps.get(path);
  if (m === undefined) {
    try {
      m = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')));
    } catch {
      m = null;
    }
    maps.set(path, m);
  }
  return m;
}

function sourceName(source: string): string {
  return source.replace(/^component-url:/, '');
}

const FRAME = /(\/[^\s()]+\.cjs):(\d+):(\d+)/g;

/**
 * Where the sandbox's own code lives — frames there are its call machinery, not
 * the component's code: the library's directory in the build, or the one-file
 * worker bundle when running from TypeScript sources.
 */
const SANDBOX_CODE = basename(__filename).startsWith('stack-map.') ? dirname(__dirname) + sep : __filename;
const INTERNAL_FRAME = /^\s+at (?:.*[(\s])?(?:sandbox-call:|node:vm:|node:async_hooks:|\S*\/node_modules\/piscina\/)/;

/** Drops the sandbox's own frames (and the vm / AsyncLocalStorage frames it calls through) from a component's error stack. */
function withoutSandboxFrames(stack: string): string {
  return stack
    .split('\n')
    .filter((line) => !(/^\s+at /.test(line) && (line.includes(SANDBOX_CODE) || INTERNAL_FRAME.test(line))))
    .join('\n');
}

export function mapStack(raw: string): string {
  const stack = withoutSandboxFrames(raw);
  if (!maps.size) return stack;
  return stack.replace(FRAME, (whole, path: string, line: string, col: string) => {
    if (!maps.has(path)) return whole;
    const map = mapFor(path);
    if (!map) return whole;
    const l = Number(line) - 1;
    const c = Math.max(0, Number(col) - 1 - (l === 0 ? firstLineOffset : 0));
    const e = map.findEntry(l, c) as { originalSource?: string; originalLine?: number; originalColumn?: number };
    if (!e || e.originalSource === undefined || e.originalLine === undefined) return whole;
    return `${sourceName(e.originalSource)}:${e.originalLine + 1}:${(e.originalColumn ?? 0) + 1}`;
  });
}
