import { clipped, SECRET_MASK } from '@app/contracts';

/**
 * The syntax of `{{ … }}` templates in a workflow step's props, shared by the api (checked at deploy)
 * and the runner (resolved at run time): only property paths, nothing is evaluated.
 */
export const TEMPLATE_WHOLE = /^\{\{\s*([^{}]+?)\s*\}\}$/;
export const TEMPLATE_PART = /\{\{\s*([^{}]+?)\s*\}\}/g;
const SEGMENT = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export class TemplateError extends Error {}

/** `a.b[0].c` or `a["b c"]` → ['a', 'b', '0', 'c']; an error quotes `expr` as `shown`. */
export function parsePath(expr: string, shown = clipped(expr)): string[] {
  const out: string[] = [];
  const re = /\.?([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+)\]|\[\s*"([^"]*)"\s*\]|\[\s*'([^']*)'\s*\]/y;
  let at = 0;
  while (at < expr.length) {
    re.lastIndex = at;
    const m = re.exec(expr);
    if (!m || (at === 0 && expr[0] === '.')) throw new TemplateError(`cannot read "{{${shown}}}": only property paths like steps.name.$return_value.field are allowed`);
    out.push(m[1] ?? m[2] ?? m[3] ?? m[4]);
    at = re.lastIndex;
  }
  if (!out.length || !SEGMENT.test(out[0])) throw new TemplateError(`cannot read "{{${shown}}}"`);
  return out;
}

/** The expressions of the templates in a string (`"a {{ x.y }}"` → `['x.y']`). */
export function templateExpressions(s: string): string[] {
  return [...s.matchAll(TEMPLATE_PART)].map((m) => m[1]);
}

/** Calls `fn` with each template expression in a props value (strings, in arrays and objects at any depth) and its path. */
export function forEachTemplate(v: unknown, path: string, fn: (expr: string, path: string) => void): void {
  if (typeof v === 'string') for (const expr of templateExpressions(v)) fn(expr, path);
  else if (Array.isArray(v)) v.forEach((item, i) => forEachTemplate(item, `${path}[${i}]`, fn));
  else if (typeof v === 'object' && v !== null) for (const [k, item] of Object.entries(v)) forEachTemplate(item, `${path}.${clipped(k)}`, fn);
}

/** The secret a template reads (`secrets.NAME`), if it reads one. */
export function secretOf(expr: string): string | undefined {
  let path: string[];
  try {
    path = parsePath(expr);
  } catch {
    return undefined;
  }
  return path[0] === 'secrets' && path.length === 2 && SECRET_NAME.test(path[1]) ? path[1] : undefined;
}

/** A string holding at least one template: its value is known only at run time. */
export function isTemplated(v: unknown): boolean {
  return typeof v === 'string' && templateExpressions(v).length > 0;
}

/**
 * Why a template cannot resolve in a step run after `earlierSteps`, or undefined: it must read `secrets.NAME`,
 * `trigger…`, `steps.trigger…` or `steps.<an earlier step>…`. The template of a `hidden` value (a secret prop's,
 * an app's `$auth`) is quoted as `{{********}}`, the step it names as `********`: a template is part of the value.
 */
export function templateProblem(expr: string, earlierSteps: readonly string[], hidden = false): string | undefined {
  const shown = hidden ? SECRET_MASK : clipped(expr);
  let path: string[];
  try {
    path = parsePath(expr, shown);
  } catch (e) {
    return (e as Error).message;
  }
  const [head, ...rest] = path;
  if (head === 'secrets') return secretOf(expr) ? undefined : `"{{${shown}}}": use {{secrets.NAME}} (a secret name is letters, digits and _)`;
  if (head === 'trigger') return undefined;
  if (head !== 'steps') return `"{{${shown}}}": a template starts with steps., trigger. or secrets.`;
  if (!rest.length) return `"{{${shown}}}": name a step ({{steps.<step>.$return_value}}, {{steps.trigger.event}})`;
  const step = rest[0];
  if (step === 'trigger' || earlierSteps.includes(step)) return undefined;
  return `"{{${shown}}}": no step "${hidden ? SECRET_MASK : clipped(step)}" runs before this one (a step reads steps.trigger and the steps before it${earlierSteps.length ? `: ${earlierSteps.join(', ')}` : ''})`;
}

/**
 * The first template in step `i`'s props (`values`, by prop name) that cannot resolve when the step runs after
 * `earlierSteps` (`templateProblem`), with its path (`steps[1].props.text`), or undefined. `hides(name)` names the
 * props whose values are hidden: their templates are not quoted.
 */
export function stepTemplateProblem(values: Record<string, unknown>, i: number, earlierSteps: readonly string[], hides: (prop: string) => boolean): { path: string; problem: string } | undefined {
  for (const [name, value] of Object.entries(values)) {
    let found: { path: string; problem: string } | undefined;
    forEachTemplate(value, `steps[${i}].props.${clipped(name)}`, (expr, path) => {
      const problem = found ? undefined : templateProblem(expr, earlierSteps, hides(name));
      if (problem) found = { path, problem };
    });
    if (found) return found;
  }
  return undefined;
}
