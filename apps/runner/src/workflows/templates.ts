/**
 * `{{ … }}` in a step's configured props: `secrets.NAME`, `steps.<step>.<path>`
 * (`$return_value`, exports, `trigger.event…`) and `trigger.…` as a short form.
 * Only property paths are read — nothing is evaluated — so this runs safely in
 * the runner. A string that is exactly one template takes the value's own type;
 * templates inside longer text are interpolated (objects as JSON).
 */
import { parsePath, TEMPLATE_PART as PART, TEMPLATE_WHOLE as WHOLE, TemplateError } from '@app/component-model';
import { jsonBytesUpTo } from './json-bytes';

export { parsePath, TemplateError };

export interface TemplateScope {
  steps: Record<string, unknown>;
  secrets: Record<string, string>;
  /**
   * How many bytes (of JSON) the templates of one value may insert together. A template inserts a reference to
   * the value it reads, so a few hundred of them naming one large event would otherwise make props that hold
   * that event hundreds of times over once they are copied or serialized.
   */
  maxBytes?: number;
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

/**
 * Resolves every template in `value` (deeply); keys are left alone. Throws a `TemplateError` once the values
 * inserted pass `scope.maxBytes`.
 */
export function resolveTemplates(value: unknown, scope: TemplateScope): unknown {
  let left = scope.maxBytes ?? Infinity;
  const spend = (bytes: number): void => {
    left -= bytes;
    if (left < 0) throw new TemplateError(`the templates of these props insert more than ${scope.maxBytes} bytes of JSON`);
  };
  const resolve = (v: unknown): unknown => {
    if (typeof v === 'string') {
      if (!v.includes('{{')) return v;
      const whole = WHOLE.exec(v);
      if (whole) {
        const found = lookup(whole[1], scope);
        spend(Number.isFinite(left) ? jsonBytesUpTo(found, left) : 0);
        return found;
      }
      return v.replace(PART, (_m, expr: string) => {
        const inserted = text(lookup(expr, scope));
        spend(Buffer.byteLength(inserted));
        return inserted;
      });
    }
    if (Array.isArray(v)) return v.map(resolve);
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = resolve(x);
      return out;
    }
    return v;
  };
  return resolve(value);
}
