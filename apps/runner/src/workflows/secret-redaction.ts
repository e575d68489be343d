import { decryptValue, REDACT_MIN_CHARS, stringsOf } from '@app/contracts';
import { sealedIn } from '../actors/props';

/** The decrypted strings of a step's sealed props (secret props, app `$auth`: `sealedIn`). */
function sealedStrings(key: Buffer, props: Record<string, unknown>, out: string[]): void {
  for (const v of Object.values(props)) {
    const at = sealedIn(v);
    if (!at) continue;
    try {
      stringsOf(decryptValue(key, at.sealed), out);
    } catch {
      // Not decryptable: the step fails on it, and there is nothing to hide.
    }
  }
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
  for (const props of stepProps) sealedStrings(key, props, found);
  return [...new Set(found.filter((s) => s.length >= REDACT_MIN_CHARS))];
}
