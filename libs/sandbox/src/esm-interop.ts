import { Parser, type Node as AcornNode } from 'acorn';

/**
 * Node's module rules for a bundle esbuild compiled to CommonJS.
 *
 * esbuild's `__toESM(mod, isNodeMode)` binds `import x from "pkg"` to `mod.default` when a
 * CommonJS package sets `__esModule` and the importing file is not in "node mode"
 * (`.mjs`). Node itself binds `module.exports`, whatever `__esModule` says, and a
 * real ES module (`require(esm)` gives its namespace) keeps its own `default`.
 * Components run on Pipedream as Node ES modules, so every import follows Node's rule.
 * A real namespace is told by `util.types.isModuleNamespaceObject`, not by its
 * `Symbol.toStringTag`: CommonJS built by webpack or rolldown sets `"Module"` on its
 * plain `module.exports` (salesforce-webhooks), and Node still binds that object.
 */
const IS_NAMESPACE = 'require("node:util").types.isModuleNamespaceObject(mod)';
const ESBUILD_TO_ESM = 'var __toESM = (mod, isNodeMode, target) => (target =';
const NODE_TO_ESM = `var __toESM = (mod, isNodeMode, target) => mod != null && typeof mod === "object" && ${IS_NAMESPACE} ? mod : (isNodeMode = 1, target =`;

export function withNodeImportRules(code: string): string {
  return code.includes(ESBUILD_TO_ESM) ? code.replace(ESBUILD_TO_ESM, NODE_TO_ESM) : code;
}

/** The helper an async module body uses for `import` (same rule as above, standalone). */
const ASYNC_HEAD =
  `return (async () => { const __essToESM = (mod) => { if (mod != null && typeof mod === "object" && ${IS_NAMESPACE}) return mod; ` +
  'const ns = Object.create(null); if (mod && (typeof mod === "object" || typeof mod === "function")) for (const k of Object.keys(mod)) ns[k] = mod[k]; ns.default = mod; return ns; }; ';

interface ImportSpec {
  type: 'ImportDefaultSpecifier' | 'ImportNamespaceSpecifier' | 'ImportSpecifier';
  local: { name: string };
  imported?: { type: string; name?: string; value?: string };
}
interface TopNode extends AcornNode {
  type: string;
  source?: { value: string } | null;
  specifiers?: (ImportSpec & { exported?: { type: string; name?: string; value?: string }; local: { type: string; name: string } })[];
  declaration?: AcornNode | null;
}

function moduleName(n: { type: string; name?: string; value?: string } | undefined): string {
  return (n?.type === 'Literal' ? n.value : n?.name) ?? '';
}

/**
 * Turns esbuild's ES module output (top-level `await` inside, npm imports left as
 * `import` statements) into the body of the loader's CommonJS wrapper that
 * returns a promise: imports become `require` with Node's default-import rule,
 * exports become `module.exports`. Lines stay where they were (source map).
 */
export function asyncModuleBody(code: string): string {
  const ast = Parser.parse(code, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true }) as unknown as { body: TopNode[] };
  const edits: { start: number; end: number; text: string }[] = [];
  let n = 0;
  const exportsOut: string[] = [];
  for (const node of ast.body) {
    if (node.type === 'ImportDeclaration') {
      const src = JSON.stringify(node.source!.value);
      const ns = `__essImport${n++}`;
      const parts = [`var ${ns} = __essToESM(require(${src}));`];
      for (const s of node.specifiers ?? []) {
        if (s.type === 'ImportNamespaceSpecifier') parts.push(`var ${s.local.name} = ${ns};`);
        else if (s.type === 'ImportDefaultSpecifier') parts.push(`var ${s.local.name} = ${ns}.default;`);
        else parts.push(`var ${s.local.name} = ${ns}[${JSON.stringify(moduleName(s.imported))}];`);
      }
      edits.push({ start: node.start, end: node.end, text: parts.join(' ') });
    } else if (node.type === 'ExportNamedDeclaration' && !node.declaration && !node.source) {
      for (const s of node.specifiers ?? []) exportsOut.push(`${JSON.stringify(moduleName(s.exported))}: { enumerable: true, get: () => ${s.local.name} }`);
      edits.push({ start: node.start, end: node.end, text: '' });
    } else if (node.type === 'ExportDefaultDeclaration') {
      const decl = node.declaration as AcornNode;
      edits.push({ start: node.start, end: decl.start, text: 'var __essDefault = ' });
      exportsOut.push('"default": { enumerable: true, get: () => __essDefault }');
    } else if (node.type.startsWith('Export')) {
      throw new Error(`unsupported export form in a module with top-level await (${node.type})`);
    }
  }
  let out = code;
  for (const e of edits.sort((a, b) => b.start - a.start)) {
    const lines = out.slice(e.start, e.end).split('\n').length - 1;
    out = out.slice(0, e.start) + e.text + '\n'.repeat(lines) + out.slice(e.end);
  }
  const tail = `\nObject.defineProperties(module.exports, { "__esModule": { value: true }, ${exportsOut.join(', ')} });\n})();`;
  return ASYNC_HEAD + out + tail;
}
