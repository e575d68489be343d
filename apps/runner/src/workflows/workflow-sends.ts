import { channelNameProblem, encodeJson, FRAMING_HEADERS, type SendMessage } from '@app/contracts';
import type { NatsService } from '@app/nats';
import type { SendRecord } from '@app/sandbox';

/** Where a successful run's `$.send.http|email|s3` calls go: stream SENDS, performed and retried by the delivery app. */
export interface SendPublisher {
  publishSends(sends: SendMessage[]): Promise<void>;
  /** `$.send.sse` (each message an encoded WorkflowSseMessage): live only (core NATS), for the workflow's SSE stream readers connected now. */
  publishSse(workflowId: string, messages: Uint8Array[]): void;
}

export class NatsSendPublisher implements SendPublisher {
  constructor(private readonly nats: NatsService) {}

  async publishSends(sends: SendMessage[]): Promise<void> {
    await Promise.all(sends.map((s) => this.nats.streams.publish(this.nats.names.send(s.workflowId), encodeJson(s), `${s.invocationId}:s${s.index}`)));
  }

  publishSse(workflowId: string, messages: Uint8Array[]): void {
    for (const m of messages) this.nats.nc.publish(this.nats.names.workflowSse(workflowId), m);
  }
}

/** What the runner knows of the operator's send configuration. */
export interface SendSettings {
  smtpUrl?: string;
  s3Endpoint?: string;
}

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * Headers the platform sets on a `$.send.http` request: the delivery app sends every account's requests over one
 * pool of keep-alive connections, so a request framed otherwise than it is sent (a GET with a Content-Length) has
 * the receiver read the next request on that connection, another account's, as part of it; `Expect` would have it
 * wait for an answer the client never asks for.
 */
const isPlatformHeader = (lower: string): boolean => FRAMING_HEADERS.has(lower) || lower === 'expect';
/**
 * Headers a proxy writes about the client it forwards. The delivery app connects from the platform's own machines,
 * which the api may trust as proxies (TRUST_PROXY): a send to a source's endpoint carrying them had the api believe
 * them, and a tenant chose the client_ip of another account's events.
 */
const FORWARDING_HEADERS: ReadonlySet<string> = new Set(['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks a `$.send.*` call when the step makes it, so a bad call fails its step
 * (an `$errors` event) instead of failing later in the delivery app. Returns
 * the problem, or undefined.
 */
export function sendProblem(send: SendRecord, settings: SendSettings): string | undefined {
  const p = send.payload;
  switch (send.kind) {
    case 'emit': {
      const channel = isObject(p) && 'raw_event' in p ? channelNameProblem(p.name) : undefined;
      return channel ? `$.send.emit(): name (the channel) ${channel}` : undefined;
    }
    case 'sse':
      if (!isObject(p) || typeof p.channel !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(p.channel)) return '$.send.sse() needs { channel, payload } with a channel of letters, digits, _ . - (at most 64)';
      return undefined;
    case 'http': {
      if (!isObject(p) || typeof p.url !== 'string') return '$.send.http() needs { url, method?, headers?, data? | body?, params? }';
      try {
        const u = new URL(p.url);
        if (u.protocol !== 'http:' && u.protocol !== 'https:') return `$.send.http(): url must be http or https, got ${u.protocol}`;
      } catch {
        return `$.send.http(): url is not a URL: ${p.url}`;
      }
      if (p.method !== undefined && (typeof p.method !== 'string' || !/^[A-Za-z]+$/.test(p.method))) return '$.send.http(): method must be an HTTP method name';
      if (p.headers !== undefined && !isObject(p.headers)) return '$.send.http(): headers must be an object';
      for (const [name, value] of Object.entries(p.headers ?? {})) {
        if (!HEADER_NAME.test(name)) return `$.send.http(): header name ${JSON.stringify(name)} is not an HTTP token`;
        if (isPlatformHeader(name.toLowerCase())) return `$.send.http(): header ${name} is the platform's to set (it frames the request or manages its connection)`;
        if (FORWARDING_HEADERS.has(name.toLowerCase())) return `$.send.http(): header ${name} is a proxy's to set (it says who the client is; the platform's requests are not a proxy's)`;
        if (!['string', 'number', 'boolean'].includes(typeof value) || /[\r\n\0]/.test(String(value))) return `$.send.http(): header ${name} must be a string without CR, LF or NUL`;
      }
      return undefined;
    }
    case 'email':
      if (!settings.smtpUrl) return '$.send.email() is not available: the operator has not configured SMTP_URL';
      if (!isObject(p) || typeof p.subject !== 'string' || (typeof p.text !== 'string' && typeof p.html !== 'string')) return '$.send.email() needs { subject, text and/or html }';
      return undefined;
    case 's3':
      if (!settings.s3Endpoint) return '$.send.s3() is not available: the operator has not configured S3_ENDPOINT';
      if (!isObject(p) || typeof p.bucket !== 'string' || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(p.bucket)) return '$.send.s3() needs { bucket, prefix?, payload } with a valid bucket name';
      if (p.prefix !== undefined && typeof p.prefix !== 'string') return '$.send.s3(): prefix must be a string';
      // A `..` segment would be resolved by the URL into another bucket's path (path-style addressing).
      if (typeof p.prefix === 'string' && (p.prefix.startsWith('/') || p.prefix.split('/').some((seg) => seg === '.' || seg === '..'))) return '$.send.s3(): prefix must not start with / or hold . or .. segments';
      return undefined;
    default:
      return `$.send.${String(send.kind)}() is not available on this service (supported: $.send.emit, $.send.http, $.send.email, $.send.s3, $.send.sse)`;
  }
}
