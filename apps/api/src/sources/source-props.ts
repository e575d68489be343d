import { ConfigurableProp, cronIntervalSeconds, encryptedFormAt, INTERFACE_HTTP, INTERFACE_TIMER } from '@app/component-model';
import { BadRequestError, decryptValue, EncryptedValue, encryptValue, isEncrypted, SECRET_MASK } from '@app/contracts';

type Values = Record<string, unknown>;

/**
 * Stored form: `secret: true` values (a string, or the `{ label, value }` a `withLabel` prop keeps) and app `$auth`
 * objects encrypted (`{ "$enc": … }`).
 */
export function encryptProps(props: ConfigurableProp[], values: Values, key: Buffer): Values {
  const out: Values = { ...values };
  for (const p of props) {
    const v = out[p.name];
    if (v === undefined) continue;
    if (p.secret) out[p.name] = encryptValue(key, v);
    if (p.type === 'app' && typeof v === 'object' && v !== null) out[p.name] = { $auth: encryptValue(key, (v as { $auth?: unknown }).$auth ?? {}) };
  }
  return out;
}

/**
 * The plain value of one the platform sealed, or undefined for one it cannot open: a value given in that form before
 * such values were refused (`{ "$enc": "AAAA" }` stored as a prop's value), left as stored so that revalidating it
 * answers a 400 naming its prop, not a 500 from the decryption.
 */
function opened(key: Buffer, v: EncryptedValue): { value: unknown } | undefined {
  try {
    return { value: decryptValue(key, v) };
  } catch {
    return undefined;
  }
}

/** Plain values of a stored document (to revalidate on update); a value that does not open stays as stored. */
export function decryptProps(values: Values, key: Buffer): Values {
  const out: Values = {};
  for (const [name, v] of Object.entries(values)) {
    const auth = typeof v === 'object' && v !== null ? (v as { $auth?: unknown }).$auth : undefined;
    const plain = isEncrypted(v) ? opened(key, v) : isEncrypted(auth) ? opened(key, auth) : undefined;
    out[name] = plain === undefined ? v : isEncrypted(v) ? plain.value : { $auth: plain.value };
  }
  return out;
}

/** Whether a stored value is hidden (a secret string or an app's `$auth`, both encrypted at rest). */
function hidden(v: unknown): boolean {
  return isEncrypted(v) || (typeof v === 'object' && v !== null && isEncrypted((v as { $auth?: unknown }).$auth));
}

/**
 * The stored values an update without `configured_props` keeps (plain, to revalidate): those of `props` (the
 * source's props after the update), HTTP interfaces aside. A hidden value goes only to a prop that hides it too
 * (secret, app): new code, or `additionalProps()`, that makes a secret prop a plain one needs its value given
 * again, else the secret would be shown.
 */
export function carriedProps(props: ConfigurableProp[], stored: Values, key: Buffer): Values {
  const plain = decryptProps(stored, key);
  const out: Values = {};
  for (const p of props) {
    if (p.type === INTERFACE_HTTP || plain[p.name] === undefined) continue;
    const opens = plain[p.name] !== stored[p.name];
    if (opens && hidden(stored[p.name]) && !p.secret && p.type !== 'app') continue;
    const at = encryptedFormAt(plain[p.name], p.name);
    if (at !== undefined) {
      const where = at === p.name ? 'its stored value' : `${at} in its stored value`;
      const message = `configured_props.${p.name}: ${where} is an object with a "$enc" string, stored before values of that form were refused: give ${p.name} a new value in configured_props`;
      throw new BadRequestError(message, { prop: p.name }, 'invalid_props');
    }
    out[p.name] = plain[p.name];
  }
  return out;
}

/**
 * A client sending a masked value back (from a previous response) for a prop that hides its value means "keep the
 * stored one" (`current`, plain). With none stored (a create, a prop or step new) there is nothing to keep: a 400,
 * rather than the mask stored as the secret. For any other prop the mask is a plain string, left as sent.
 */
export function unmaskInput(props: ConfigurableProp[], input: Values, current: Values): Values {
  const out: Values = { ...input };
  for (const p of props) {
    const v = out[p.name];
    const app = p.type === 'app' && typeof v === 'object' && v !== null && (v as { $auth?: unknown }).$auth === SECRET_MASK;
    if (!app && !(p.secret && v === SECRET_MASK)) continue;
    if (current[p.name] === undefined) {
      throw new BadRequestError(`configured_props.${p.name}: "${SECRET_MASK}" keeps the ${app ? '$auth' : 'secret'} stored for ${p.name}, and none is: give its value`, { prop: p.name }, 'invalid_props');
    }
    // Left sealed by decryptProps: not a value the platform sealed, stored before values of that form were refused.
    if (hidden(current[p.name])) {
      throw new BadRequestError(`configured_props.${p.name}: "${SECRET_MASK}" keeps the ${app ? '$auth' : 'secret'} stored for ${p.name}, and the one stored is an object with a "$enc" string that the platform did not encrypt, stored before values of that form were refused: give its value`, { prop: p.name }, 'invalid_props');
    }
    out[p.name] = current[p.name];
  }
  return out;
}

/** Timer value in responses: `{ cron, interval_seconds }` (+ `timezone` when set). */
export function timerView(v: unknown): Values {
  const t = (v ?? {}) as { intervalSeconds?: number; cron?: string; timezone?: string };
  if (t.cron) return { cron: t.cron, interval_seconds: cronIntervalSeconds(t.cron, t.timezone), ...(t.timezone ? { timezone: t.timezone } : {}) };
  return { cron: null, interval_seconds: t.intervalSeconds ?? null };
}

/** `configured_props` as the API shows it: endpoint URLs, timer views, secrets masked. */
export function propsView(props: ConfigurableProp[], stored: Values, endpointUrl: string | undefined): Values {
  const out: Values = {};
  for (const p of props) {
    const v = stored[p.name];
    if (p.type === INTERFACE_HTTP) out[p.name] = { endpoint_url: endpointUrl ?? null };
    else if (p.type === INTERFACE_TIMER) out[p.name] = timerView(v);
    else if (v === undefined) continue;
    else if (p.secret) out[p.name] = SECRET_MASK;
    else if (p.type === 'app') out[p.name] = { $auth: SECRET_MASK };
    else out[p.name] = v;
  }
  return out;
}

/** `my Source!` → `my-source`. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/, '');
  return slug || 'source';
}
