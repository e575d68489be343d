import { randomFillSync } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Random bytes from the CSPRNG, drawn 4 KiB at a time: one `getrandom` per
 * ~200 ids instead of one per id (an id per HTTP request and per emitted event).
 * Every byte is used once.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function takeRandom(length: number): Buffer {
  if (length > pool.length) return randomFillSync(Buffer.alloc(length));
  if (poolAt + length > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = pool.subarray(poolAt, poolAt + length);
  poolAt += length;
  return out;
}

/** Random lowercase alphanumeric string (host-name safe). */
export function randomToken(length: number): string {
  const bytes = takeRandom(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % ALPHABET.length];
  return out;
}

export const ID_PREFIX = {
  component: 'sc_',
  source: 'dc_',
  workflow: 'p_',
  webhook: 'wh_',
  subscription: 'sub_',
  user: 'u_',
  org: 'o_',
  deployment: 'd_',
  cell: 'c_',
  apiKey: 'key_',
  autoSubscription: 'asub_',
  delivery: 'dlv_',
  invocation: 'inv_',
  retry: 'rty_',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

/** A new id of the given kind, e.g. `dc_k3x9…`. */
export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + randomToken(20);
}

/** The endpoint key of an HTTP source: `/e/<key>` or `<key>.<domain>`. */
export function newEndpointKey(): string {
  return 'en' + randomToken(22);
}

export function idKind(id: string): IdKind | undefined {
  for (const [kind, prefix] of Object.entries(ID_PREFIX)) {
    if (id.startsWith(prefix)) return kind as IdKind;
  }
  return undefined;
}

/** Splits an event id `<epoch_ms>-<seq>` into its numeric parts; undefined when malformed. */
export function parseEventId(id: string): { ms: number; seq: number } | undefined {
  const m = /^(\d{1,15})-(\d{1,9})$/.exec(id);
  return m ? { ms: Number(m[1]), seq: Number(m[2]) } : undefined;
}
