import pino, { Logger } from 'pino';
import type { INestApplicationContext, LoggerService } from '@nestjs/common';

export type { Logger } from 'pino';

/** Structured JSON logs on stderr, one logger per app. */
export function createLogger(app: string, level: string): Logger {
  return pino({ name: app, level, base: { app } }, pino.destination({ fd: 2, sync: false }));
}

/** Routes Nest's own log lines into pino. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string): void {
    this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}

/**
 * Nest's shutdown hooks on the stop signals (SIGTERM, Ctrl-C…), ending in an exit (code 0) rather than in dying of the
 * signal again: only an exit lets pino write the lines still in its buffer (a stop's last lines, such as the runner's
 * leases released, were lost).
 */
export function closeOnStopSignals(app: INestApplicationContext): void {
  app.enableShutdownHooks([], { useProcessExit: true });
}
