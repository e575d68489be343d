import type { JsMsg } from 'nats';
import { decodeJson, type DeliveryMessage } from '@app/contracts';

/**
 * One webhook delivery the sender works on: a message from DELIVERIES, or an
 * event the router hands over directly (no DELIVERIES hop). The sender settles
 * it exactly as it would a stream message: `ack` (delivered, or its next attempt
 * is durably queued), `term` (dropped: webhook gone, attempts exhausted), `nak`
 * (not attempted now: a stream message is redelivered, a direct one goes to DELIVERIES).
 */
export interface DeliveryItem {
  readonly webhookId: string;
  /** Handed over by the router (its emit waits unacknowledged), not a DELIVERIES message. */
  readonly direct: boolean;
  /** Deliveries of the message (or, direct, of the emit) so far: above 1 means an attempt may have been made already. */
  readonly deliveryCount: number;
  /** The delivery; throws for a message that is not JSON. */
  read(): DeliveryMessage;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
  working(): void;
}

/** A DELIVERIES message as a DeliveryItem (subject `dlv.<webhookId>`). */
export function streamItem(m: JsMsg): DeliveryItem {
  return {
    webhookId: m.subject.slice(m.subject.lastIndexOf('.') + 1),
    direct: false,
    deliveryCount: m.info.redeliveryCount,
    read: () => decodeJson<DeliveryMessage>(m.data),
    ack: () => m.ack(),
    nak: (delayMs) => m.nak(delayMs),
    term: () => m.term(),
    working: () => m.working(),
  };
}

/** How a direct delivery ended: `done` (acked or termed by the sender), `handoff` (to be published to DELIVERIES). */
export type DirectOutcome = 'done' | 'handoff';

/** An event the router hands to the sender directly; settles the returned promise instead of a stream message. */
export function directItem(msg: DeliveryMessage, deliveryCount: number): { item: DeliveryItem; outcome: Promise<DirectOutcome> } {
  let settle!: (o: DirectOutcome) => void;
  const outcome = new Promise<DirectOutcome>((r) => (settle = r));
  const item: DeliveryItem = {
    webhookId: msg.webhookId,
    direct: true,
    deliveryCount,
    read: () => msg,
    ack: () => settle('done'),
    term: () => settle('done'),
    nak: () => settle('handoff'),
    working: () => undefined,
  };
  return { item, outcome };
}
