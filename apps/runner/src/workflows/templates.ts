/**
 * `{{ … }}` in a step's configured props: `secrets.NAME`, `steps.<step>.<path>`
 * (`$return_value`, exports, `trigger.event…`) and `trigger.…` as a short form.
 * Only property paths are read — nothing is evaluated — so this runs safely in
 * the runner. A string that is exactly one template takes the value's own type;
 * templates inside longer text are interpolated (objects as JSON).
 */
import { parsePath, TEMPLATE_PART as PART, TEMPLATE_WHOLE as WHOLE, TemplateError } from '@app/component-model';

export { parsePath, TemplateError };

export interface TemplateScope {
  steps: Record<string, unknown>;
  secrets: Record<string, string>;
}

function lookup(expr: string, scope: TemplateScope): unknown {
  const path = parsePath(expr);
  const [head, ...rest] = path;
  let root: unknown;
  if (head === 'secrets') {
    if (rest.length !== 1) throw new TemplateError(`"{{${expr}}}": use {{secrets.NAME}}`);
    // Own names only: `{{secrets.constructor}}` is not a secret.
    if (!Object.prototype.hasOwnProperty.call(scope.secrets, rest[0])) throw new TemplateError(`secret ${rest[0]} is not set on this workflow`);
    return scope.secrets[rest[0]];
  }
  if (head === 'steps') root = scope.steps;
  else if (head === 'trigger') root = { trigger: scope.steps.trigger };
  else throw new TemplateError(`"{{${expr}}}": a template starts with steps., trigger. or secrets.`);
  let v: unknown = head === 'trigger' ? (root as Record<string, unknown>) : root;
  for (const seg of head === 'trigger' ? path : rest) {
    if (v === null || v === undefined || typeof v !== 'object') return undefined;
    v = Object.prototype.hasOwnProperty.call(v, seg) ? (v as Record<string, unknown>)[seg] : undefined;
  }
  return v;
}

function text(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Resolves every template in `value` (deeply); keys are left alone. */
export function resolveTemplates(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === 'string') {
    if (!value.includes('{{')) return value;
    const whole = WHOLE.exec(value);
    if (whole) return lookup(whole[1], scope);
    return value.replace(PART, (_m, expr: string) => text(lookup(expr, scope)));
  }
  if (Array.isArray(value)) return value.map((v) => resolveTemplates(v, scope));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveTemplates(v, scope);
    return out;
  }
  return value;
}
