/** An error the CLI reports as one line on stderr before exiting non-zero. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** The API answered with an error body `{ error, code, details? }`. */
export class ApiResponseError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Turns any thrown value into the one line shown to the user. */
export function describeError(e: unknown): string {
  if (e instanceof CliError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
