import { decodeJson, encodeJson, isEmitBatch, mapSliced, type TimeSlicer } from '@app/contracts';
import type { EmitGroup, GroupRun } from '../actors/actor-deps';

/** Room kept in a part's message for its envelope (invocation ids) and headers. */
export const PART_ENVELOPE_BYTES = 16 * 1024;

/** A run with its events encoded once (for the budgets, the size checks and the message). */
export interface EncodedRun {
  run: GroupRun;
  encoded: Uint8Array[];
  bytes: number;
}

/** The run's events encoded, handing the event loop back between them (`slicer`: a run may emit 64 MiB). */
export async function encodeRun(run: GroupRun, slicer: TimeSlicer): Promise<EncodedRun> {
  const encoded = await mapSliced(run.events, (e) => encodeJson(e), slicer);
  return { run, encoded, bytes: encoded.reduce((n, e) => n + e.byteLength + 1, 0) };
}

/** One `EmitBatch` message of a group: the runs whose events are in it, or a run too large to share one. */
export interface Part {
  runs: EncodedRun[];
  /** Listed in the part (`separate`); its events go one per message, after the part is stored. */
  separate?: EncodedRun;
}

/**
 * The next part from the front of `runs`, in order: as many runs as fit `maxBytes` together, or — when the first
 * run alone does not fit — that run as a separate one (so that events are stored in the order they were emitted).
 */
export function nextPart(runs: EncodedRun[], maxBytes: number): { part: Part; rest: EncodedRun[] } {
  const room = maxBytes - PART_ENVELOPE_BYTES;
  if (runs[0].bytes > room) return { part: { runs: [], separate: runs[0] }, rest: runs.slice(1) };
  let bytes = 0;
  let n = 0;
  while (n < runs.length && bytes + runs[n].bytes <= room) bytes += runs[n++].bytes;
  return { part: { runs: runs.slice(0, n) }, rest: runs.slice(n) };
}

/** Whether a part holds anything a re-run must find: events, or a run listed as separate. */
export const worthStoring = (part: Part): boolean => part.separate !== undefined || part.runs.some((r) => r.encoded.length > 0);

/** The part's message body (`EmitBatch`), written from the events' encodings. */
export function partBody(part: Part): Uint8Array {
  const head: Record<string, string[]> = { invocations: part.runs.map((r) => r.run.invocationId) };
  if (part.separate) head.separate = [part.separate.run.invocationId];
  const json = JSON.stringify(head);
  const pieces: Uint8Array[] = [Buffer.from(`${json.slice(0, -1)},"events":[`)];
  part.runs.forEach((r) =>
    r.encoded.forEach((e) => {
      if (pieces.length > 1) pieces.push(COMMA);
      pieces.push(e);
    }),
  );
  pieces.push(CLOSE);
  return Buffer.concat(pieces);
}

const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']}');

/**
 * Records in the group what a stored part (the earlier copy of a part this delivery found to be a duplicate)
 * says of its invocations. Returns false when the part cannot be read (erased or aged out of EMITS since): its
 * content is unknown, and the caller takes the runs it tried to store as stored — as a duplicate event id is.
 */
export function noteStoredPart(group: EmitGroup, data: Uint8Array | undefined): boolean {
  let decoded: unknown;
  try {
    decoded = data ? decodeJson<unknown>(data) : undefined;
  } catch {
    decoded = undefined;
  }
  if (!isEmitBatch(decoded)) return false;
  for (const id of decoded.invocations) group.stored.add(id);
  for (const id of decoded.separate ?? []) group.separate.add(id);
  return true;
}
