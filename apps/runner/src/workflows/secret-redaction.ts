import { decryptValue, isEncrypted, REDACT_MIN_CHARS, stringsOf } from '@app/contracts';

/** The decrypted strings of a step's encrypted props (secret props, app `$auth`). */
function encryptedStrings(key: Buffer, v: unknown, out: string[]): void {
  if (isEncrypted(v)) {
    try {
      stringsOf(decryptValue(key, v), out);
    } catch {
      // Not decryptable: the step fails on it, and there is nothing to hide.
    }
  } else if (Array.isArray(v)) for (const x of v) encryptedStrings(key, x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) encryptedStrings(key, x, out);
}

/**
 * Values a workflow may have to hide: its records are searched for each of them, so a workflow holding more does
 * not run (a few hundred values in a run's megabytes of output would hold the runner's thread for seconds).
 */
export const REDACT_MAX_VALUES = 64;

/** The values a run's record must not show: the workflow's secrets and every step's secret props and `$auth`. */
export function secretValues(key: Buffer, secrets: Record<string, string>, stepProps: Record<string, unknown>[]): string[] {
  const found: string[] = [];
  stringsOf(Object.values(secrets), found);
  for (const props of stepProps) encryptedStrings(key, props, found);
  return [...new Set(found.filter((s) => s.length >= REDACT_MIN_CHARS))];
}
