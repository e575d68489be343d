import type { ObjectInfo, ObjectStore } from 'nats';
import { TimeSlicer } from '@app/contracts';

/** The object store's chunk size (nats.js's default `max_chunk_size`). */
const CHUNK_BYTES = 128 * 1024;

/**
 * Puts `data` under `name` as putBlob does, fed chunk by chunk with the event loop handed back between chunks once
 * TimeSlicer's slice is due: putBlob hashes (nats.js's SHA-256 is JavaScript) and publishes a whole blob in one
 * synchronous go — 5 MiB of component code held the api's thread ~0.1 s.
 */
export function putSliced(os: ObjectStore, name: string, data: Uint8Array, slicer = new TimeSlicer()): Promise<ObjectInfo> {
  return os.put({ name }, slicedStream(data, slicer));
}

/** `data` as a stream of CHUNK_BYTES chunks, each read after a hand-back of the event loop when `slicer` is due. */
function slicedStream(data: Uint8Array, slicer: TimeSlicer): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (slicer.due()) await slicer.handBack();
      if (at < data.length) controller.enqueue(data.subarray(at, at + CHUNK_BYTES));
      at += CHUNK_BYTES;
      if (at >= data.length) controller.close();
    },
  });
}
