import { headers, JetStreamClient, JetStreamManager, ObjectStore } from 'nats';

/** Metadata key holding when a publisher last vouched for an object (epoch ms, as a string). */
export const TOUCHED_AT = 'touched_at_ms';

/** The stored meta record of an object (as the object store keeps it) and its stream sequence. */
export interface RawObjectInfo {
  name: string;
  nuid: string;
  mtime: string;
  deleted?: boolean;
  metadata?: Record<string, string>;
  revision: number;
  size?: number;
  chunks?: number;
  digest?: string;
  [k: string]: unknown;
}

interface ObjectStoreInternals {
  stream: string;
  js: JetStreamClient;
  jsm: JetStreamManager;
  _metaSubject(name: string): string;
  _chunkSubject(nuid: string): string;
}

const internals = (os: ObjectStore): ObjectStoreInternals => os as unknown as ObjectStoreInternals;

/** The object's meta record with its revision (null when never stored). */
export async function rawObjectInfo(os: ObjectStore, name: string): Promise<RawObjectInfo | null> {
  const o = internals(os);
  try {
    const m = await o.jsm.streams.getMessage(o.stream, { last_by_subj: o._metaSubject(name) });
    const record = JSON.parse(new TextDecoder().decode(m.data)) as RawObjectInfo;
    return { ...record, revision: m.seq };
  } catch (e) {
    if ((e as { code?: string }).code === '404' || /no message found/i.test((e as Error).message)) return null;
    throw e;
  }
}

/** When the object was stored or last touched (epoch ms). */
export function lastTouchMs(info: Pick<RawObjectInfo, 'mtime' | 'metadata'>): number {
  const touched = Number(info.metadata?.[TOUCHED_AT] ?? 0);
  const stored = Date.parse(info.mtime) || 0;
  return Math.max(stored, Number.isFinite(touched) ? touched : 0);
}

const isWrongSequence = (e: unknown): boolean => /wrong last sequence/i.test((e as Error).message);

/** Publishes a new meta record only if the object's meta is still at `expected` (compare-and-set); false when it moved. */
async function putMetaIf(os: ObjectStore, record: Record<string, unknown> & { name: string }, expected: number): Promise<boolean> {
  const o = internals(os);
  const h = headers();
  h.set('Nats-Expected-Last-Subject-Sequence', String(expected));
  h.set('Nats-Rollup', 'sub');
  try {
    await o.js.publish(o._metaSubject(record.name), new TextEncoder().encode(JSON.stringify(record)), { headers: h });
    return true;
  } catch (e) {
    if (isWrongSequence(e)) return false;
    throw e;
  }
}

/** Records "in use as of now" on a live object (compare-and-set on its meta revision); false when the object changed meanwhile. */
export async function touchObject(os: ObjectStore, info: RawObjectInfo, nowMs = Date.now()): Promise<boolean> {
  const { revision, ...record } = info;
  return putMetaIf(os, { ...record, metadata: { ...(record.metadata ?? {}), [TOUCHED_AT]: String(nowMs) } }, revision);
}

/**
 * Deletes the object only if its meta is still the one in `info` (not re-stored or touched since):
 * a tombstone is written with compare-and-set, then the chunks are purged. False when it moved.
 */
export async function deleteObjectIf(os: ObjectStore, info: RawObjectInfo): Promise<boolean> {
  const { revision, ...record } = info;
  const ok = await putMetaIf(os, { ...record, deleted: true, size: 0, chunks: 0, digest: '' }, revision);
  if (!ok) return false;
  const o = internals(os);
  await o.jsm.streams.purge(o.stream, { filter: o._chunkSubject(info.nuid) });
  return true;
}
