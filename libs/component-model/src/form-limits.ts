/**
 * Limits of what component code answers while a form is built (docs/api.md): checked in the
 * sandbox, before an answer leaves it, so that no account can make the api hold a huge one.
 */

/** Most props one `additionalProps()` call may add. */
export const ADDITIONAL_PROPS_MAX_COUNT = 200;
/** Largest JSON of the props one `additionalProps()` call adds. */
export const ADDITIONAL_PROPS_MAX_BYTES = 256 * 1024;
/** Largest JSON of what one `options()` (or an app hook's `eventNames()`) call returns: its options and context. */
export const OPTIONS_MAX_BYTES = 1024 * 1024;
