import { NatsConnection } from 'nats';
import { ServiceUnavailableError } from '@app/contracts';
import { PublishUnavailableError } from './stream-publisher';

/**
 * Codes of the NATS client's errors that mean NATS (or JetStream) did not answer for now — not
 * connected, restarting, electing a leader — so the same request may succeed later.
 * `503` is "no responders": nobody answered the JetStream API request.
 */
const UNAVAILABLE_CODES = new Set(['TIMEOUT', '503', 'CONNECTION_CLOSED', 'CONNECTION_DRAINING', 'CONNECTION_REFUSED', 'CONNECTION_TIMEOUT', 'DISCONNECT']);
/** JetStream API errors of a server that cannot serve the request for now (system unavailable, no leader). */
const UNAVAILABLE_API_CODES = new Set([10008]);

/** Whether `e` is the NATS client's (or a `StreamPublisher`'s) way of saying NATS is unavailable for now. */
export function isNatsUnavailable(e: unknown): boolean {
  if (e instanceof PublishUnavailableError) return true;
  if (!(e instanceof Error) || e.name !== 'NatsError') return false;
  const { code, api_error } = e as Error & { code?: string; api_error?: { code?: number; err_code?: number } };
  if (code && UNAVAILABLE_CODES.has(code)) return true;
  return api_error?.code === 503 || (api_error?.err_code !== undefined && UNAVAILABLE_API_CODES.has(api_error.err_code));
}

/** The 503 a request that needs NATS gets while NATS is unavailable. */
export function natsUnavailableError(): ServiceUnavailableError {
  return new ServiceUnavailableError('the service cannot reach NATS right now: retry later', 1);
}

/**
 * Tracks whether a connection is up, from its status events: while the client is reconnecting, a
 * publish would only wait in its buffer until a timeout (and may be sent after the caller gave up),
 * so requests that need NATS wait a moment for the reconnection (another node of a cluster answers
 * within milliseconds) and are refused if it does not come.
 */
export class ConnectionState {
  private up = true;
  /** Reconnections so far: a consumer made before one may be gone (a restarted server keeps no ephemeral consumer). */
  reconnects = 0;
  private waiters = new Set<() => void>();

  constructor(nc: NatsConnection) {
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnecting') this.up = false;
        else if (s.type === 'reconnect') this.reconnected();
      }
    })().catch(() => undefined);
  }

  get connected(): boolean {
    return this.up;
  }

  /** Resolves to whether the connection is up, waiting at most `waitMs` for a reconnection. */
  whenConnected(waitMs: number): Promise<boolean> {
    if (this.up) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(this.up);
      };
      const timer = setTimeout(done, waitMs);
      this.waiters.add(done);
    });
  }

  private reconnected(): void {
    this.up = true;
    this.reconnects++;
    for (const w of [...this.waiters]) w();
  }
}
