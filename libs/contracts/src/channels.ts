import { characterCount } from './characters';
import { hasLoneSurrogate } from './http-event';

/** Longest channel name an event may have: `event_summaries.name`, and a subscription's `event_name`. */
export const CHANNEL_NAME_MAX_CHARS = 255;

/**
 * Why component code cannot emit on channel `name` (`$emit(e, { name })`, `$.send.emit({ name })`), or
 * undefined when it can: absent, or a string of at most 255 characters not starting with `$` (`$errors` and
 * `$logs` are written by the platform; other `$` names are reserved and could not be subscribed to), holding no U+0000
 * and no lone UTF-16 surrogate (no request can name those: the api refuses them, and Postgres stores them as U+FFFD,
 * so such a channel's events could be neither subscribed to nor read by their name).
 */
export function channelNameProblem(name: unknown): string | undefined {
  if (name === undefined || name === null) return undefined;
  if (typeof name !== 'string') return `must be a string, got ${Array.isArray(name) ? 'an array' : typeof name}`;
  const chars = name.length > CHANNEL_NAME_MAX_CHARS ? characterCount(name) : 0;
  if (chars > CHANNEL_NAME_MAX_CHARS) return `must be at most ${CHANNEL_NAME_MAX_CHARS} characters, got ${chars}`;
  if (name.startsWith('$')) return 'must not start with $ ($errors and $logs are written by the platform; other $ names are reserved)';
  if (name.includes('\u0000') || hasLoneSurrogate(name)) return 'must not hold U+0000 or a lone UTF-16 surrogate (no subscription could name the channel)';
  return undefined;
}

/** The classes of channels retention counts apart (EVENT_RETENTION each): default and custom channels share `emits`. */
export const CHANNEL_CLASSES = ['emits', '$errors', '$logs'] as const;
export type ChannelClass = (typeof CHANNEL_CLASSES)[number];

export function channelClassOf(name: string): ChannelClass {
  return name === '$errors' || name === '$logs' ? name : 'emits';
}
