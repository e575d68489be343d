import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import type { Plugin } from 'esbuild';

/** The runtime always provides its own `@pipedream/platform` (docs/api.md); a range for it is not sent. */
const PROVIDED = new Set(['@pipedream/platform']);
/** An npm version, range or dist-tag that fits in an import specifier (no spaces, URLs, paths or `workspace:`). */
const PLAIN_RANGE = /^[\w^~<>=.*-]+$/;

/**
 * The `dependencies` of the package.json nearest to `dir` (that folder or the first parent with one), as
 * name → range: the versions Node loads there once they are installed. Only plain npm ranges are kept.
 */
export function packagePins(dir: string): Map<string, string> {
  for (let at = dir; ; at = dirname(at)) {
    const file = join(at, 'package.json');
    if (existsSync(file)) {
      let deps: Record<string, unknown> = {};
      try {
        deps = JSON.parse(readFileSync(file, 'utf8')).dependencies ?? {};
      } catch {
        return new Map();
      }
      const usable = Object.entries(deps).filter(
        ([name, range]) => typeof range === 'string' && PLAIN_RANGE.test(range) && !PROVIDED.has(name) && !builtinModules.includes(name),
      );
      return new Map(usable as [string, string][]);
    }
    if (dirname(at) === at) return new Map();
  }
}

/** `@scope/name/sub` → [`@scope/name`, `/sub`]; a specifier that already has a version gives no name. */
function packageOf(specifier: string): [string, string] | undefined {
  const m = /^((?:@[^/@]+\/)?[^/@]+)(\/.*)?$/.exec(specifier);
  return m ? [m[1], m[2] ?? ''] : undefined;
}

/** An esbuild plugin that writes a package.json range into each unpinned npm import it has one for. */
export function pinImports(pins: Map<string, string>, pinned: { count: number }): Plugin {
  return {
    name: 'package-json-pins',
    setup(build) {
      if (!pins.size) return;
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        const [name, rest] = packageOf(args.path) ?? [];
        const range = name ? pins.get(name) : undefined;
        if (!name || !range) return undefined;
        pinned.count++;
        return { path: `${name}@${range}${rest}`, external: true };
      });
    },
  };
}
