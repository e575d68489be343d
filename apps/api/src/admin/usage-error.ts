/** An admin command line that cannot be run as written (exit code 64): an unknown command or flag, a missing one. */
export class UsageError extends Error {}
