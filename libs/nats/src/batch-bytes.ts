/**
 * What one batch read from a stream holds of a process's memory at most (unless one message alone is larger: NATS's
 * `max_payload`, 1 MiB by default): a live event stream's batch, and what a paused reader of it is owed; a range
 * delete's scan of `EMITS`, and index recovery's reading of it again (`boundedFetches`).
 */
export const BATCH_BYTES = 2 * 1024 * 1024;
