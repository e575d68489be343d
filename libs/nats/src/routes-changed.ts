import { encodeJson, RoutesChanged } from '@app/contracts';
import type { NatsService } from './nats.service';

/** Longest wait for the NATS server to have taken an announcement (NATS unreachable: the delivery apps' safety-net read catches up). */
const ANNOUNCE_FLUSH_MS = 2_000;

/**
 * Tells the delivery apps that routes changed (`changed.<kind>`), naming which (`RoutesChanged`) so that they read
 * those routes only: with hundreds of thousands of subscriptions a full read takes seconds, and routing waits for
 * the read of a change. Without `change`, every route is read again (an org membership, which reaches many).
 * Resolves once the NATS server has taken it (a flush): the caller answers its client after that, so an event emitted
 * once the client has its answer reaches each delivery app after the change, which reads the routes again before it
 * routes the event. Published without waiting, a webhook just made inactive still got an event emitted after the
 * client's 200.
 */
export async function announceRoutes(nats: NatsService, kind: 'subscriptions' | 'webhooks' | 'sources', change?: RoutesChanged): Promise<void> {
  nats.nc.publish(nats.names.changed(kind), change ? encodeJson(change) : undefined);
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((r) => (timer = setTimeout(r, ANNOUNCE_FLUSH_MS)));
  await Promise.race([nats.nc.flush().catch(() => undefined), gaveUp]);
  clearTimeout(timer);
}
