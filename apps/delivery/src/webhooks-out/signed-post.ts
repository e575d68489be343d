import type { DeliveryMessage } from '@app/contracts';
import type { AddressPolicy } from '@app/net';
import type { DeliveryMetrics } from '../common/metrics';
import type { WebhookTarget } from '../router/subscription-cache';
import type { AttemptRecord } from './delivery-log';
import { PostError, SOCKETS_PER_HOST, WebhookHttp } from './http-post';
import { WebhookSigner } from './webhook-signer';

/** How much of a response body an attempt record keeps. */
const RESPONSE_BODY_MAX = 1024;

/**
 * A channel name as a header value: as it is when printable ASCII without `%` and without a space at either end, else
 * percent-encoded UTF-8, so that `decodeURIComponent` always gives the name back. HTTP parsers strip a header value's
 * leading and trailing spaces: a channel `" "` reached receivers as `""`, the default channel's name. A channel may be named with any characters (`$emit(e, { name: "☃" })`,
 * a line break), which no header can carry: such events failed every attempt ("invalid x-pd-event-name header") and
 * never reached the webhook. A `%` sent as it was made a receiver's decodeURIComponent throw ("100%") or read another
 * name ("%C3%A9" as "é").
 */
export function eventNameHeader(name: string): string {
  return /^(?:[\x21-\x24\x26-\x7e](?:[\x20-\x24\x26-\x7e]*[\x21-\x24\x26-\x7e])?)?$/.test(name) ? name : encodeURIComponent(name);
}

/** The `webhook-id` of an event: its event id (DESIGN.md); `x-pd-emitter-id` tells emitters apart. */
export const webhookIdOf = (ev: { id: string }): string => ev.id;

/** An attempt as recorded, with the status and Retry-After when the endpoint answered. */
export interface Sent {
  status?: number;
  retryAfter?: string | string[];
  record: Omit<AttemptRecord, 'status'>;
}

/** Webhook requests signed as Standard Webhooks prescribes, one signer (its decoded key) kept per webhook. */
export class SignedPost {
  private readonly http: WebhookHttp;
  private readonly signers = new Map<string, { secret: string; signer: WebhookSigner }>();

  constructor(policy: AddressPolicy, private readonly metrics: DeliveryMetrics, private readonly timeoutMs: number, concurrency: number, lookupsAtOnce?: number) {
    // A host's connections are shared by its webhooks: one webhook may still use all of its request slots.
    this.http = new WebhookHttp(policy, Math.max(SOCKETS_PER_HOST, concurrency), lookupsAtOnce);
  }

  /** One signed POST of `body`; never throws (a failure is in the record). */
  async send(hook: WebhookTarget & { secret: string }, ev: DeliveryMessage['event'], body: string, now: Date, base: Omit<AttemptRecord, 'status'>): Promise<Sent> {
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'event-source-service-webhooks/1',
      // The same on every retry: receivers dedupe on it (with x-pd-emitter-id when fed by several sources).
      'webhook-id': webhookIdOf(ev),
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': this.signer(hook.id, hook.secret).sign(webhookIdOf(ev), now, body),
      'x-pd-emitter-id': ev.emitterId,
      'x-pd-event-name': eventNameHeader(ev.name ?? ''),
      'x-pd-emit-id': ev.emitId,
      'x-pd-event-id': ev.id,
    };
    try {
      // Each webhook has connections of its own: another's hung receiver on the same host never holds them. Its
      // names are looked up as its account's: no other account's lookups answer them from a cache.
      const res = await this.http.post(hook.url, headers, body, this.timeoutMs, RESPONSE_BODY_MAX, { key: hook.id, account: hook.ownerId });
      this.metrics.webhookLatency.observe({ outcome: res.status >= 200 && res.status < 300 ? 'success' : 'failure' }, res.latencyMs / 1000);
      return { status: res.status, retryAfter: res.headers['retry-after'], record: { ...base, responseCode: res.status, latencyMs: res.latencyMs, responseBody: res.body } };
    } catch (e) {
      const err = e as PostError;
      return { record: { ...base, latencyMs: err.latencyMs, error: err.message } };
    }
  }

  /** Drops the signer of a webhook that is gone. */
  forget(hookId: string): void {
    this.signers.delete(hookId);
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private signer(hookId: string, secret: string): WebhookSigner {
    const hit = this.signers.get(hookId);
    if (hit && hit.secret === secret) return hit.signer;
    const signer = new WebhookSigner(secret);
    this.signers.set(hookId, { secret, signer });
    return signer;
  }
}
