import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './env';
import { decodeJson, DesiredSourceState, Names, partitionOf } from '@app/contracts';
import { System } from './system';

/** A minimal HTTP source (CommonJS). */
export const HTTP_SOURCE = `module.exports = {
  name: "Test HTTP Source",
  key: "test-http-source",
  version: "0.0.1",
  props: { http: "$.interface.http", db: "$.service.db" },
  async run(event) { this.$emit(event.body, { summary: "request" }); },
};`;

/** An HTTP source that emits `body.n` small events per request (`{ i }`). */
export const FLOOD_SOURCE = 'module.exports = { name: "Flood", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { for (let i = 0; i < e.body.n; i++) this.$emit({ i }); } };';

/** A timer source (ESM). */
export const TIMER_SOURCE = `export default {
  name: "Test Timer",
  key: "test-timer",
  version: "0.1.0",
  dedupe: "unique",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } } },
  async run() { this.$emit({ at: Date.now() }, { id: String(Date.now()) }); },
};`;

/** Reads a source's desired state from the system's KV `sources` bucket (undefined when absent or deleted). */
export async function desiredState(system: System, sourceId: string): Promise<DesiredSourceState | undefined> {
  const nc: NatsConnection = await connect(natsAdmin());
  try {
    const names = new Names(system.natsPrefix);
    const kv = await nc.jetstream().views.kv(names.sourcesBucket);
    const entry = await kv.get(names.sourceKey(partitionOf(sourceId, Number(system.env.PARTITIONS)), sourceId));
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson<DesiredSourceState>(entry.value);
  } finally {
    await nc.close();
  }
}

/** Reads an object from the system's `components` object store. */
export async function storedCode(system: System, codeHash: string): Promise<string | undefined> {
  const nc: NatsConnection = await connect(natsAdmin());
  try {
    const os = await nc.jetstream().views.os(new Names(system.natsPrefix).componentsStore);
    const blob = await os.getBlob(codeHash);
    return blob ? Buffer.from(blob).toString('utf8') : undefined;
  } finally {
    await nc.close();
  }
}
