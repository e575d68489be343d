import { decodeJson, encodeJson } from '@app/contracts';
import type { NatsService } from '@app/nats';

/**
 * Puts a desired state (of a source or a workflow) into KV `sources`, never
 * moving it backwards: a put only replaces an entry holding an older `rev`
 * (compare-and-set on the KV revision), so concurrent publishers cannot
 * reinstate a stale state.
 */
export async function putNewerDesired(nats: NatsService, key: string, state: { rev: number }, what: string): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const entry = await nats.sources.get(key);
    if (entry && entry.operation === 'PUT' && entry.value.length && decodeJson<{ rev: number }>(entry.value).rev >= state.rev) return;
    try {
      if (entry) await nats.sources.update(key, encodeJson(state), entry.revision);
      else await nats.sources.create(key, encodeJson(state));
      return;
    } catch (e) {
      if (!/wrong last sequence|key exists/i.test((e as Error).message)) throw e;
    }
  }
  throw new Error(`could not publish desired state of ${what}: concurrent writers`);
}
