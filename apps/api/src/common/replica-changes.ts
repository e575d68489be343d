import { StringCodec } from 'nats';
import type { NatsService } from '@app/nats';

/**
 * Changes every api replica must hear of at once, each carrying one id:
 * - `endpoints`: an endpoint key whose source or workflow now answers differently (activated, deactivated, deleted,
 *   another component): each replica's ingress forgets what it cached of it;
 * - `deleted`: a source or workflow id just deleted: each replica ends the event streams open on it.
 */
export type ReplicaChange = 'endpoints' | 'deleted';

const codec = StringCodec();
/** This api's own listeners: told at once, before the change is announced to the other replicas. */
const local: Record<ReplicaChange, Set<(value: string) => void>> = { endpoints: new Set(), deleted: new Set() };

/** Calls `listener` with each value of a `kind` change, made on this replica or (`changed.<kind>`) any other. Returns the unsubscribe. */
export function onReplicaChange(nats: NatsService, kind: ReplicaChange, listener: (value: string) => void): () => void {
  local[kind].add(listener);
  const sub = nats.nc.subscribe(nats.names.changed(kind), { callback: (_e, m) => listener(codec.decode(m.data)) });
  return () => {
    local[kind].delete(listener);
    sub.unsubscribe();
  };
}

/** Tells every api replica, this one first, of a `kind` change of each of `values` (empty ones skipped). */
export function announceReplicaChange(nats: NatsService, kind: ReplicaChange, values: (string | null | undefined)[]): void {
  for (const value of new Set(values)) {
    if (!value) continue;
    for (const listener of local[kind]) listener(value);
    nats.nc.publish(nats.names.changed(kind), codec.encode(value));
  }
}
