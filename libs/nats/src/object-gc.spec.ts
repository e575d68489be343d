import { randomBytes } from 'node:crypto';
import { connect, NatsConnection, ObjectStore } from 'nats';
import { deleteObjectIf, lastTouchMs, rawObjectInfo, touchObject } from './object-gc';
import { natsAdmin, need } from '../../../test/support/env';

// Real NATS (the test run's server): the compare-and-set touch and delete the component collector relies on.
describe('object store compare-and-set touch and delete', () => {
  const bucket = `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}_os`;
  let nc: NatsConnection;
  let os: ObjectStore;

  beforeAll(async () => {
    nc = await connect(natsAdmin());
    os = await nc.jetstream().views.os(bucket);
  });
  afterAll(async () => {
    await os.destroy().catch(() => undefined);
    await nc.drain();
  });

  const read = async (name: string): Promise<string | null> => {
    const r = await os.get(name);
    if (!r) return null;
    const chunks: Uint8Array[] = [];
    const reader = r.data.getReader();
    for (let x = await reader.read(); !x.done; x = await reader.read()) chunks.push(x.value);
    return Buffer.concat(chunks).toString('utf8');
  };

  it('a touch moves the last-touch time and keeps the content; a delete based on the older meta then fails', async () => {
    await os.putBlob({ name: 'a' }, Buffer.from('code a'));
    const before = (await rawObjectInfo(os, 'a'))!;
    expect(before.deleted).toBeFalsy();
    expect(await touchObject(os, before, lastTouchMs(before) + 60_000)).toBe(true);
    const after = (await rawObjectInfo(os, 'a'))!;
    expect(lastTouchMs(after)).toBe(lastTouchMs(before) + 60_000);
    expect(await read('a')).toBe('code a');
    // The collector read `before`, a publisher touched since: the delete must not happen.
    expect(await deleteObjectIf(os, before)).toBe(false);
    expect(await read('a')).toBe('code a');
    // A second touch from the same stale view also fails.
    expect(await touchObject(os, before)).toBe(false);
  });

  it('a delete on the current meta removes the object; a touch from before the delete then fails', async () => {
    await os.putBlob({ name: 'b' }, Buffer.from('code b'));
    const info = (await rawObjectInfo(os, 'b'))!;
    expect(await deleteObjectIf(os, info)).toBe(true);
    expect((await rawObjectInfo(os, 'b'))!.deleted).toBe(true);
    expect(await read('b')).toBeNull();
    expect(await touchObject(os, info)).toBe(false);
    expect(await rawObjectInfo(os, 'never-stored')).toBeNull();
  });
});
