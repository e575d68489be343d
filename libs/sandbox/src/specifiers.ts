import { isBuiltin } from 'node:module';

/**
 * Bare import specifiers as component authors write them: `lodash`, `lodash/get.js`,
 * `axios@0.19.2`, `@octokit/rest@^18/dist`, `node:crypto`, `crypto`.
 * Shared by the bundler (main thread) and the worker's `require`.
 */
export interface BareSpecifier {
  /** Package name (`@scope/name` or `name`). */
  name: string;
  /** Version pin as written (`0.19.2`, `^1.2`, `~1.2`), or undefined. */
  version?: string;
  /** Subpath including the leading slash (`/promise`), or ''. */
  subpath: string;
  /** A Node builtin (`fs`, `node:fs`, also `crypto@1.0.0`). */
  builtin: boolean;
}

const SCOPED = /^(@[^/@\s]+\/[^/@\s]+)(?:@([^/\s]+))?(\/.*)?$/;
const PLAIN = /^([^/@\s.][^/@\s]*)(?:@([^/\s]+))?(\/.*)?$/;

/** The package name when `spec` is a bare specifier, else undefined (relative, absolute, URL). */
export function parseBareSpecifier(spec: string): BareSpecifier | undefined {
  if (spec.startsWith('node:')) return { name: spec, subpath: '', builtin: true };
  const m = spec.startsWith('@') ? SCOPED.exec(spec) : PLAIN.exec(spec);
  if (!m || /^[a-z][a-z0-9+.-]*:/i.test(spec)) return undefined;
  const [, name, version, subpath = ''] = m;
  const builtin = !name.startsWith('@') && isBuiltin(name + subpath);
  return { name, version, subpath, builtin };
}

/**
 * Why a pin cannot be installed from the npm registry, or undefined when it can: npm
 * versions, ranges (`0.19.2`, `^1.2`, `~0.20.0`, `0.21.x`, `>=7`, `v1.2.3`) and dist-tags
 * (`latest`, `next`) can be; git, URL, file and `npm:` alias specs cannot (they carry `:`,
 * `#` or a `/`, which in an import already starts the subpath).
 */
export function pinProblem(raw: string): string | undefined {
  if (/^[./]/.test(raw) || /^[a-z][a-z0-9+.-]*:/i.test(raw)) return undefined;
  const at = raw.indexOf('@', raw.startsWith('@') ? 1 : 0);
  if (at < 0 || raw.slice(0, at).includes('/') !== raw.startsWith('@')) return undefined;
  const rest = raw.slice(at + 1);
  if (rest === '' || rest.startsWith('/')) return `import "${raw}" has an empty version after "@"`;
  const pin = parseBareSpecifier(raw)?.version ?? rest;
  // A pin that starts with `.` (`x@..`, `x@.`, `x@.git`) is a path to npm: it linked a directory of the server's npm cache
  // as the package (and its error named the server's paths); no npm version, range or tag starts with one.
  if (/[:#]/.test(pin) || /^[^/]*:/.test(rest) || pin.startsWith('.') || pin.startsWith('~/')) {
    return `import "${raw}": a version in an import must be an npm version, range or dist-tag (for example axios@0.19.2, axios@^1.6, axios@latest); git, URL, file and npm: alias specs are not installed`;
  }
  return undefined;
}

/** The specifier with its version pin removed: `axios@0.19.2/lib` → `axios/lib`. */
export function stripPin(spec: BareSpecifier): string {
  return spec.name + spec.subpath;
}

/** The package that is always available from the project's own node_modules when not pinned. */
export const PLATFORM_PACKAGE = '@pipedream/platform';

/**
 * Dependency specs of a component (`name` or `name@range`) turned into an
 * install map name → range (`latest` for unpinned). The first pin seen for a
 * name wins over an unpinned import of the same name.
 */
export function dependencyMap(specs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of specs) {
    const s = parseBareSpecifier(raw);
    if (!s || s.builtin) continue;
    if (s.name === PLATFORM_PACKAGE && !s.version) continue;
    if (s.version) {
      if (!out[s.name] || out[s.name] === 'latest') out[s.name] = s.version;
    } else if (!out[s.name]) {
      out[s.name] = 'latest';
    }
  }
  return out;
}
