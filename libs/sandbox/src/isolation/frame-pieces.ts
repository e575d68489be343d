import { serialize } from 'node:v8';

/**
 * Large answers of a sandbox, sent in pieces. The app reads each frame with `v8.deserialize`, in one synchronous
 * step on its main thread, and a run's result may be 64 MiB: 60 events of 40,000 small objects each held the
 * runner's thread for about a second while it read them, and every other account's requests waited. So the host
 * sends an answer larger than PIECE_BYTES as pieces of about that size (`piece` frames: entries to add to an array
 * or object, or characters to append to a string, at a path inside the answer), then the answer with those parts
 * left empty; the app reads one frame at a time, handing its event loop back between them (frame-channel.ts), and
 * puts the answer together (PieceAssembly). Code in the sandbox can write frames itself, so the app bounds every
 * frame (FRAME_MAX_BYTES) whatever the host would send, and reads each piece as untrusted input: a piece that does
 * not fit the answer so far is a violation of the protocol.
 */
export const PIECE_BYTES = 256 * 1024;
/** The largest frame the app reads from a sandbox: a piece, with room for a value the host could not cut smaller. */
export const FRAME_MAX_BYTES = 1024 * 1024;
/** Characters of a string per piece: at most 256 KiB serialized (two bytes each at most). */
const TEXT_CHARS = PIECE_BYTES / 2;
/** How deep a piece's path may reach, and the longest key it names (a part under a longer one goes whole). */
const PATH_MAX = 64;
const KEY_IN_PATH_MAX = 2048;

export type PieceKey = string | number;
/** Items to append to the array at `path` (the first at index `from`), fields to add to the object there, or characters to append to the string there. */
export type PiecePart = { from: number; items: unknown[] } | { entries: [string, unknown][] } | { text: string };
export type Piece = { t: 'piece'; id: number; path: PieceKey[] } & PiecePart;

/** An object `v8.serialize` writes as its own enumerable properties (of any realm), not a Map, Date, Error, binary data… */
const isPlainObject = (v: object): boolean => Object.getPrototypeOf(v) === Object.prototype || (!Array.isArray(v) && Object.prototype.toString.call(v) === '[object Object]');
const splittable = (v: unknown): v is unknown[] | Record<string, unknown> => typeof v === 'object' && v !== null && (Array.isArray(v) ? v.length <= 2 ** 24 : isPlainObject(v));

/**
 * About how many bytes `value` serializes to, never less (strings counted at two bytes a character), counted only
 * until they pass `limit`: the host asks this of every part of a large answer, so the count stops early.
 */
export function bytesAtLeast(value: unknown, limit: number): number {
  if (typeof value === 'string') return 2 * value.length + 6;
  if (typeof value !== 'object' || value === null) return 10;
  let n = 6;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length && n <= limit; i++) n += bytesAtLeast(value[i], limit - n);
  } else if (isPlainObject(value)) {
    for (const k of Object.keys(value)) {
      n += 2 * k.length + 6 + bytesAtLeast((value as Record<string, unknown>)[k], limit - n);
      if (n > limit) break;
    }
  } else n += serialize(value).byteLength;
  return n;
}

/** A part of an answer that cannot be cut into pieces and is over FRAME_MAX_BYTES. */
export class UncuttableError extends Error {}

/**
 * The frame bodies of answer `value` of task `id` as pieces, and what to send in its place in the final message: an
 * empty string, array or object the pieces fill. Throws UncuttableError for a value no piece can carry, or whose
 * pieces pass `maxBytes`: a value referenced many times is serialized once, but each of its places is a piece.
 */
export function cutInPieces(id: number, value: unknown, maxBytes: number): { bodies: Buffer[]; shell: unknown } {
  const bodies: Buffer[] = [];
  let total = 0;
  const piece = (path: PieceKey[], part: PiecePart): void => {
    const body = serialize({ t: 'piece', id, path, ...part });
    total += body.byteLength;
    if (total > maxBytes) throw new UncuttableError(`its parts come to more than ${maxBytes} bytes (a value it holds in several places is sent once for each)`);
    bodies.push(body);
  };
  const shellOf = (v: unknown): unknown => (typeof v === 'string' ? '' : Array.isArray(v) ? [] : {});

  const cut = (v: unknown, path: PieceKey[]): void => {
    if (typeof v === 'string') {
      for (let i = 0; i < v.length; i += TEXT_CHARS) piece(path, { text: v.slice(i, i + TEXT_CHARS) });
      return;
    }
    const parent = v as unknown[] | Record<string, unknown>;
    const array = Array.isArray(parent);
    let group: [PieceKey, unknown][] = [];
    let groupBytes = 0;
    const flush = (): void => {
      if (group.length) piece(path, array ? { from: group[0][0] as number, items: group.map((e) => e[1]) } : { entries: group as [string, unknown][] });
      group = [];
      groupBytes = 0;
    };
    const keys: PieceKey[] = array ? Array.from(parent.keys()) : Object.keys(parent);
    for (const key of keys) {
      const child = (parent as Record<PieceKey, unknown>)[key];
      const keyBytes = typeof key === 'string' ? 2 * key.length + 6 : 10;
      const bytes = keyBytes + bytesAtLeast(child, PIECE_BYTES);
      if (bytes <= PIECE_BYTES) {
        if (groupBytes + bytes > PIECE_BYTES) flush();
        group.push([key, child]);
        groupBytes += bytes;
      } else if (path.length < PATH_MAX - 1 && keyBytes <= KEY_IN_PATH_MAX && (typeof child === 'string' || splittable(child))) {
        // Its place first (the app fills only what is there), then its own pieces.
        group.push([key, shellOf(child)]);
        flush();
        cut(child, [...path, key]);
      } else {
        const whole = keyBytes + serialize(child).byteLength;
        if (whole > FRAME_MAX_BYTES - PIECE_BYTES) throw new UncuttableError(`it holds a value of ${whole} bytes that cannot be sent in parts (at most ${FRAME_MAX_BYTES - PIECE_BYTES})`);
        flush();
        group.push([key, child]);
        flush();
      }
    }
    flush();
  };

  if (typeof value !== 'string' && !splittable(value)) {
    const whole = serialize(value).byteLength;
    if (whole > FRAME_MAX_BYTES - PIECE_BYTES) throw new UncuttableError(`it is a value of ${whole} bytes that cannot be sent in parts (at most ${FRAME_MAX_BYTES - PIECE_BYTES})`);
    return { bodies, shell: value };
  }
  cut(value, []);
  return { bodies, shell: shellOf(value) };
}

/** A piece as read from a sandbox's channel, or why it is not one. */
export function checkedPiece(m: Record<string, unknown>): Piece | string {
  if (!Number.isSafeInteger(m.id)) return 'a piece without a task id';
  const path = m.path;
  if (!Array.isArray(path) || path.length > PATH_MAX || !path.every(isKey)) return 'a piece without a path';
  const id = m.id as number;
  if (typeof m.text === 'string') return { t: 'piece', id, path, text: m.text };
  if (Array.isArray(m.items) && Number.isSafeInteger(m.from)) return { t: 'piece', id, path, from: m.from as number, items: m.items };
  if (!Array.isArray(m.entries) || !m.entries.every((e) => Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && isKey(e[0]))) return 'a piece without entries';
  return { t: 'piece', id, path, entries: m.entries as [string, unknown][] };
}

const isKey = (k: unknown): k is PieceKey => (typeof k === 'string' && k !== '__proto__') || (Number.isSafeInteger(k) && (k as number) >= 0);

/**
 * One answer put together from its pieces as they arrive (each in its own turn of the app's event loop: putting 600
 * pieces in at once held it 90 ms). The first piece makes the answer's outermost string, array or object. Arrays are
 * only appended to (a piece cannot make one sparse), only own properties of what the answer holds are followed, and
 * no key reaches a prototype.
 */
export class PieceAssembly {
  private readonly holder: { value?: unknown } = {};

  /** Puts `p` in; why it does not fit the answer so far, if it does not. */
  add(p: Piece): string | undefined {
    if (!('value' in this.holder)) {
      if (p.path.length) return "a piece inside an answer that has none yet";
      this.holder.value = 'text' in p ? '' : 'items' in p ? [] : {};
    }
    const path: PieceKey[] = ['value', ...p.path];
    if ('text' in p) {
      const parent = follow(this.holder, path.slice(0, -1));
      const key = path[path.length - 1];
      if (parent === undefined || !Object.hasOwn(parent, key) || typeof (parent as Record<PieceKey, unknown>)[key] !== 'string') return 'a piece of text for no string';
      (parent as Record<PieceKey, unknown>)[key] += p.text;
      return undefined;
    }
    const target = follow(this.holder, path);
    if (target === undefined) return 'a piece for no array or object';
    if ('items' in p) {
      if (!Array.isArray(target) || p.from !== target.length) return 'a piece out of order';
      for (const item of p.items) target.push(item);
      return undefined;
    }
    if (Array.isArray(target)) return 'a piece of fields for an array';
    for (const [key, value] of p.entries) {
      if (Object.hasOwn(target, key)) return 'a piece that sets a field twice';
      (target as Record<string, unknown>)[key] = value;
    }
    return undefined;
  }

  /** The answer, when the host's message has the empty string, array or object of the same kind in its place; else why not. */
  finish(shell: unknown): { value: unknown } | string {
    const v = this.holder.value;
    const empty =
      typeof shell === 'string'
        ? shell === '' && typeof v === 'string'
        : Array.isArray(shell)
          ? shell.length === 0 && Array.isArray(v)
          : typeof shell === 'object' && shell !== null && Object.keys(shell).length === 0 && typeof v === 'object' && v !== null && !Array.isArray(v);
    return empty ? { value: v } : 'an answer that does not match its pieces';
  }
}

/** The array or plain object at `path` inside `root`, through own properties only; undefined when there is none. */
function follow(root: object, path: PieceKey[]): object | undefined {
  let at: unknown = root;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return undefined;
    if (Array.isArray(at) !== (typeof key === 'number')) return undefined;
    at = (at as Record<PieceKey, unknown>)[key];
  }
  return typeof at === 'object' && at !== null && (Array.isArray(at) || isPlainObject(at)) ? at : undefined;
}
