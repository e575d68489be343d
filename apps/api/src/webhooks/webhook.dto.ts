import { BadRequestError, SECRET_MASK } from '@app/contracts';
import { Webhook, WebhookDelivery } from '@app/db';
import { AddressPolicy, credentialsMasked, literalHostReason, masksCredentials } from '@app/net';
import { parseHttpUrl } from '../common/http-url';

export interface WebhookDto {
  id: string;
  user_id: string;
  name: string | null;
  description: string | null;
  /** As written, its user info and the values of query parameters named like credentials as `********`: see `keptUrl`. */
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
    url: credentialsMasked(w.url),
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
 * An http(s) URL with a hostname; anything else is a 400 naming the rule. A literal address that deliveries refuse
 * whatever the operator allows (link-local and metadata, unspecified, multicast, reserved; the platform's own ports
 * on this machine) is a 400 too: no setting would ever deliver there. Loopback and private addresses are accepted,
 * refused or not at each delivery by ALLOW_LOOPBACK / ALLOW_PRIVATE_ADDRESSES as they are then, and host names are
 * judged at each connect, after resolution.
 */
export function validateWebhookUrl(value: unknown, policy: AddressPolicy): string {
  const url = parseHttpUrl(value, 'url', 'https://example.com/hook');
  const refused = literalHostReason(url, { ...policy, allowLoopback: true, allowPrivate: true });
  if (refused) throw new BadRequestError(`url: ${refused}: no delivery would be made`, { field: 'url', reason: 'blocked' });
  return (value as string).trim();
}

/**
 * The url to store for `given` (a valid one): the `stored` one when `given` is it as answers show it (a client
 * writing back what it read keeps the credentials deliveries use), else `given`. Any other URL with `********` for
 * credentials is a 400: the mask keeps nothing there, and would be sent to the receiver as its credentials.
 */
export function keptUrl(given: string, stored?: string): string {
  if (stored !== undefined && given === credentialsMasked(stored)) return stored;
  if (!masksCredentials(new URL(given))) return given;
  const why = stored === undefined ? 'the credentials stored in this webhook\'s url, and none are' : 'the stored url\'s credentials only in that url sent back as answers show it';
  throw new BadRequestError(`url: "${SECRET_MASK}" keeps ${why}: give them`, { field: 'url' });
}
