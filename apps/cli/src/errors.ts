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

/** An error status whose body is not `{ error, code }`: a server at api_base_url that is not this service, or a proxy. */
export class ForeignErrorAnswer extends ApiResponseError {}

/** The API itself answered 404: another server's 404 says nothing about what was looked up. */
export function isNotFound(e: unknown): boolean {
  return e instanceof ApiResponseError && e.status === 404 && !(e instanceof ForeignErrorAnswer);
}

/** Turns any thrown value into the one line shown to the user. */
export function describeError(e: unknown): string {
  if (e instanceof CliError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
