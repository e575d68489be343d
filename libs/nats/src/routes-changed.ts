import { encodeJson, RoutesChanged } from '@app/contracts';
import type { NatsService } from './nats.service';

/**
 * Tells the delivery apps that routes changed (`changed.<kind>`), naming which (`RoutesChanged`) so that they read
 * those routes only: with hundreds of thousands of subscriptions a full read takes seconds, and routing waits for
 * the read of a change. Without `change`, every route is read again (an org membership, which reaches many).
 */
export function announceRoutes(nats: NatsService, kind: 'subscriptions' | 'webhooks' | 'sources', change?: RoutesChanged): void {
  nats.nc.publish(nats.names.changed(kind), change ? encodeJson(change) : undefined);
}
