import type { ConfigurableProp, PropOption } from '../types';

/** What the form holds for a prop, before it becomes a configured_props value. */
export type Raw = string | boolean | string[] | TimerRaw | undefined;
export interface TimerRaw {
  mode: 'interval' | 'cron';
  interval: string;
  cron: string;
  timezone: string;
}

export const MASK = '********';
const JSON_TYPES = new Set(['object', 'json', 'any', 'http_request', 'sql']);
/** Props that take no value from the user. */
export const NO_VALUE = new Set(['$.interface.http', '$.service.db', 'alert']);
/** Those, and a timer with its own (`static`) schedule. */
export const takesNoValue = (p: ConfigurableProp): boolean => NO_VALUE.has(p.type) || (p.type === '$.interface.timer' && p.static !== undefined);

export const isArray = (p: ConfigurableProp): boolean => p.type.endsWith('[]');
export const optionValue = (o: PropOption): unknown => (typeof o === 'object' && o !== null ? o.value : o);
export const optionLabel = (o: PropOption): string => (typeof o === 'object' && o !== null ? o.label : String(o));

const text = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/** The form's starting value: the source's current value when editing, else the prop's default. */
export function initialRaw(p: ConfigurableProp, current?: unknown): Raw {
  const v = current !== undefined ? current : p.default;
  if (p.type === '$.interface.timer') {
    const t = (v ?? {}) as { intervalSeconds?: number; interval_seconds?: number; cron?: string | null; timezone?: string };
    const cron = t.cron ?? '';
    return { mode: cron ? 'cron' : 'interval', interval: String(t.intervalSeconds ?? t.interval_seconds ?? 60), cron, timezone: t.timezone ?? '' };
  }
  if (p.type === 'boolean') return v === true;
  if (p.type === 'app') return current !== undefined ? MASK : '';
  if (isArray(p)) {
    const list = Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))) : [];
    return p.options ? list : list.join('\n');
  }
  if (p.options && !JSON_TYPES.has(p.type)) return v === undefined ? '' : JSON.stringify(v);
  if (JSON_TYPES.has(p.type) && typeof v !== 'string') return text(v);
  return text(v);
}

/** configured_props from the form, or the fields the browser already knows are wrong. */
export function toConfigured(props: ConfigurableProp[], raw: Record<string, Raw>): { value: Record<string, unknown>; errors: Record<string, string> } {
  const value: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const p of props) {
    if (takesNoValue(p)) continue;
    const r = raw[p.name];
    const set = (v: unknown) => {
      value[p.name] = v;
    };
    try {
      if (p.type === '$.interface.timer') {
        const t = r as TimerRaw;
        if (t.mode === 'cron') set({ cron: t.cron.trim(), ...(t.timezone.trim() ? { timezone: t.timezone.trim() } : {}) });
        else set({ intervalSeconds: Number(t.interval) });
      } else if (p.type === 'boolean') set(r === true);
      else if (p.type === 'app') {
        const s = String(r ?? '').trim();
        if (s === MASK) set({ $auth: MASK });
        else if (s) set({ $auth: JSON.parse(s) });
      } else if (isArray(p)) {
        const items = Array.isArray(r) ? r.map((x) => JSON.parse(x)) : String(r ?? '').split('\n').map((x) => x.trim()).filter(Boolean);
        if (!items.length && p.optional) continue;
        set(p.type === 'integer[]' && !Array.isArray(r) ? items.map(Number) : p.type === 'boolean[]' && !Array.isArray(r) ? items.map((x) => x === 'true') : items);
      } else {
        const s = String(r ?? '');
        if (s.trim() === '') {
          if (!p.optional && p.default === undefined) errors[p.name] = 'required';
          continue;
        }
        if (p.options && !JSON_TYPES.has(p.type)) set(JSON.parse(s));
        else if (p.type === 'integer') {
          if (!/^-?\d+$/.test(s.trim())) throw new Error('a whole number');
          set(Number(s));
        } else if (JSON_TYPES.has(p.type)) set(p.type === 'sql' && !/^\s*[[{]/.test(s) ? s : JSON.parse(s));
        else set(s);
      }
    } catch (e) {
      errors[p.name] = e instanceof SyntaxError ? 'not valid JSON' : `expected ${(e as Error).message}`;
    }
  }
  return { value, errors };
}
