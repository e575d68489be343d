import { BadRequestError, CHANNEL_NAME_MAX_CHARS, clipped, longerThan } from '@app/contracts';

/**
 * A channel a request names (a subscription's, or the one an event read selects): `""` (default channel), a custom
 * name, `$errors` or `$logs`; other `$` names are reserved, so no event can be on them.
 */
export function validateChannel(value: unknown, field = 'event_name'): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new BadRequestError(`${field} must be a string`, { field });
  if (longerThan(value, CHANNEL_NAME_MAX_CHARS)) throw new BadRequestError(`${field} must be at most ${CHANNEL_NAME_MAX_CHARS} characters`, { field });
  if (value.startsWith('$') && value !== '$errors' && value !== '$logs') {
    throw new BadRequestError(`${field} may be empty (default channel), a custom channel name, $errors or $logs`, { field, value: clipped(value) });
  }
  return value;
}
