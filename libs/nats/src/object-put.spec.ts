import { randomBytes } from 'node:crypto';
import { TimeSlicer } from '@app/contracts';
import { putSliced } from './object-put';
import { scratchObjectStore } from '../../../test/support/scratch-object-store';

/** A slicer always due: every chunk is read after a hand-back. */
class EveryChunk extends TimeSlicer {
  handBacks = 0;
  override due(): boolean {
    return true;
  }
  override async handBack(): Promise<void> {
    this.handBacks++;
    await super.handBack();
  }
}

// Real NATS (the test run's server): what the api stores component code with.
describe('putSliced', () => {
  const store = scratchObjectStore('put');

  const read = async (name: string): Promise<Buffer> => {
    const r = (await store.os.get(name))!;
    const chunks: Uint8Array[] = [];
    const reader = r.data.getReader();
    for (let x = await reader.read(); !x.done; x = await reader.read()) chunks.push(x.value);
    return Buffer.concat(chunks);
  };

  it('stores what putBlob stores, handing the event loop back between chunks', async () => {
    const data = randomBytes(1024 * 1024 + 5);
    const slicer = new EveryChunk();
    const sliced = await putSliced(store.os, 'sliced', data, slicer);
    // 9 chunks of 128 KiB, each read after a turn of the event loop.
    expect(slicer.handBacks).toBeGreaterThanOrEqual(9);
    const blob = await store.os.putBlob({ name: 'blob' }, data);
    expect({ size: sliced.size, chunks: sliced.chunks, digest: sliced.digest }).toEqual({ size: blob.size, chunks: blob.chunks, digest: blob.digest });
    expect((await read('sliced')).equals(data)).toBe(true);
  });

  it('stores an empty object', async () => {
    const info = await putSliced(store.os, 'empty', new Uint8Array(0));
    expect(info.size).toBe(0);
    expect((await read('empty')).length).toBe(0);
  });
});
