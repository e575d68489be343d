import { BadRequestError } from '@app/contracts';
import { Webhook, WebhookDelivery } from '@app/db';

export interface WebhookDto {
  id: string;
  user_id: string;
  name: string | null;
  description: string | null;
  url: string;
  active: boolean;
  created_at: number;
  updated_at: number;
  /** Only when the webhook was disabled by the service (a 410 from the endpoint). */
  disabled_reason?: string;
  /** Only in the create response: the `whsec_…` signing secret. */
  secret?: string;
}

export function toWebhookDto(w: Webhook, secret?: string): WebhookDto {
  const dto: WebhookDto = {
    id: w.id,
    user_id: w.userId,
    name: w.name ?? null,
    description: w.description ?? null,
    url: w.url,
    active: w.active,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
  };
  if (w.disabledReason) dto.disabled_reason = w.disabledReason;
  if (secret) dto.secret = secret;
  return dto;
}

export interface WebhookDeliveryDto {
  id: string;
  event_id: string;
  emitter_id: string;
  attempt: number;
  status: string;
  response_code: number | null;
  latency_ms: number | null;
  response_body: string | null;
  error: string | null;
  next_attempt_at_ms: number | null;
  created_at_ms: number;
}

export function toDeliveryDto(d: WebhookDelivery): WebhookDeliveryDto {
  return {
    id: d.id,
    event_id: d.eventId,
    emitter_id: d.emitterId,
    attempt: d.attempt,
    status: d.status,
    response_code: d.responseCode ?? null,
    latency_ms: d.latencyMs ?? null,
    response_body: d.responseBody ?? null,
    error: d.error ?? null,
    next_attempt_at_ms: d.nextAttemptAtMs ?? null,
    created_at_ms: d.createdAtMs,
  };
}

/**
 * `scheme://authority` as written: WHATWG's parser repairs `http:///x`, `http:/x`, `http:x` and
 * `http:\\x` into `http://x/`, so a URL it accepts may still have been sent without a hostname.
 */
const WRITTEN_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/[^/\\?#\s]/i;

/** An http(s) URL with a hostname; anything else is a 400 naming the rule. */
export function validateWebhookUrl(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new BadRequestError('url is required', { field: 'url' });
  if (value.length > 2048) throw new BadRequestError('url must be at most 2048 characters', { field: 'url' });
  // The parser drops tabs and line breaks silently: what is stored and shown would not be the URL called.
  if (/[\u0000-\u001f\u007f]/.test(value.trim())) throw new BadRequestError('url must not contain control characters (tabs, line breaks)', { field: 'url', value });
  let parsed: URL;
  try {
    parsed = new URL(value.trim());
  } catch {
    throw new BadRequestError('url must be an absolute http or https URL with a hostname, e.g. https://example.com/hook', { field: 'url', value });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new BadRequestError(`url must use http or https, not ${parsed.protocol.replace(/:$/, '')}`, { field: 'url', value });
  }
  if (!parsed.hostname || !WRITTEN_AUTHORITY.test(value.trim())) throw new BadRequestError('url must include a hostname after the scheme, e.g. https://example.com/hook', { field: 'url', value });
  return value.trim();
}
