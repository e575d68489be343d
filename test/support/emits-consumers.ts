import { connect, type ConsumerInfo, type NatsConnection } from 'nats';
import { Names } from '@app/contracts';
import { natsAdmin } from './env';
import type { System } from './system';

/**
 * The consumers of EMITS on a source's subject (the api's event streams and range-delete scans), as the server lists
 * them; through `conn` when given (a test polling it), else a connection of its own.
 */
export async function emitsConsumersOf(system: System, sourceId: string, conn?: NatsConnection): Promise<ConsumerInfo[]> {
  const nc = conn ?? (await connect(natsAdmin()));
  try {
    const names = new Names(system.natsPrefix);
    const subject = names.emit(sourceId);
    const found: ConsumerInfo[] = [];
    for await (const c of (await nc.jetstreamManager()).consumers.list(names.emitsStream)) {
      // A consumer deleted while the server lists them is listed as null.
      if (!c) continue;
      if (c.config.filter_subject === subject || c.config.filter_subjects?.includes(subject)) found.push(c);
    }
    return found;
  } finally {
    if (!conn) await nc.close();
  }
}
