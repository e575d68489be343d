import { StringCodec } from 'nats';
import type { NatsService } from '@app/nats';

const codec = StringCodec();
/** This api's listeners (its EndpointLookup): told at once, before the change is announced to the other replicas. */
const local = new Set<(endpointKey: string) => void>();

/** Calls `forget` with each endpoint key that changed, on this replica and (`changed.endpoints`) every other. Returns the unsubscribe. */
export function onEndpointChanged(nats: NatsService, forget: (endpointKey: string) => void): () => void {
  local.add(forget);
  const sub = nats.nc.subscribe(nats.names.changed('endpoints'), { callback: (_e, m) => forget(codec.decode(m.data)) });
  return () => {
    local.delete(forget);
    sub.unsubscribe();
  };
}

/**
 * A source's or workflow's endpoint now answers differently (activated, deactivated, deleted, another component):
 * the ingress of every api replica forgets what it cached of these keys, so the next request reads the row.
 */
export function endpointsChanged(nats: NatsService, keys: (string | null | undefined)[]): void {
  for (const key of new Set(keys)) {
    if (!key) continue;
    for (const forget of local) forget(key);
    nats.nc.publish(nats.names.changed('endpoints'), codec.encode(key));
  }
}
