import { randomBytes } from 'node:crypto';
import { connect, NatsConnection, ObjectStore } from 'nats';
import { natsAdmin, need } from './env';

/**
 * An object-store bucket of its own on the test run's NATS server for one describe block, destroyed after it:
 * `const store = scratchObjectStore('put'); … store.os`.
 */
export function scratchObjectStore(suffix: string): { readonly os: ObjectStore } {
  const bucket = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}_${suffix}`;
  let nc: NatsConnection;
  const store = {} as { os: ObjectStore };
  beforeAll(async () => {
    nc = await connect(natsAdmin());
    store.os = await nc.jetstream().views.os(bucket);
  });
  afterAll(async () => {
    await store.os?.destroy().catch(() => undefined);
    await nc?.drain();
  });
  return store;
}
