import { deleteObjectIf, lastTouchMs, rawObjectInfo, touchObject } from './object-gc';
import { scratchObjectStore } from '../../../test/support/scratch-object-store';

// Real NATS (the test run's server): the compare-and-set touch and delete the component collector relies on.
describe('object store compare-and-set touch and delete', () => {
  const store = scratchObjectStore('os');

  const read = async (name: string): Promise<string | null> => {
    const r = await store.os.get(name);
    if (!r) return null;
    const chunks: Uint8Array[] = [];
    const reader = r.data.getReader();
    for (let x = await reader.read(); !x.done; x = await reader.read()) chunks.push(x.value);
    return Buffer.concat(chunks).toString('utf8');
  };

  it('a touch moves the last-touch time and keeps the content; a delete based on the older meta then fails', async () => {
    await store.os.putBlob({ name: 'a' }, Buffer.from('code a'));
    const before = (await rawObjectInfo(store.os, 'a'))!;
    expect(before.deleted).toBeFalsy();
    expect(await touchObject(store.os, before, lastTouchMs(before) + 60_000)).toBe(true);
    const after = (await rawObjectInfo(store.os, 'a'))!;
    expect(lastTouchMs(after)).toBe(lastTouchMs(before) + 60_000);
    expect(await read('a')).toBe('code a');
    // The collector read `before`, a publisher touched since: the delete must not happen.
    expect(await deleteObjectIf(store.os, before)).toBe(false);
    expect(await read('a')).toBe('code a');
    // A second touch from the same stale view also fails.
    expect(await touchObject(store.os, before)).toBe(false);
  });

  it('a delete on the current meta removes the object; a touch from before the delete then fails', async () => {
    await store.os.putBlob({ name: 'b' }, Buffer.from('code b'));
    const info = (await rawObjectInfo(store.os, 'b'))!;
    expect(await deleteObjectIf(store.os, info)).toBe(true);
    expect((await rawObjectInfo(store.os, 'b'))!.deleted).toBe(true);
    expect(await read('b')).toBeNull();
    expect(await touchObject(store.os, info)).toBe(false);
    expect(await rawObjectInfo(store.os, 'never-stored')).toBeNull();
  });
});
