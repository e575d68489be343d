/** Event ids `<epoch_ms>-<seq>`, strictly increasing per emitter (also across restarts: `lastMs` is persisted). */
export interface EmitterClockState {
  lastMs: number;
  seq: number;
}

export class EmitterClock {
  constructor(private state: EmitterClockState = { lastMs: 0, seq: 0 }, private readonly now: () => number = Date.now) {}

  next(): string {
    const t = this.now();
    if (t > this.state.lastMs) this.state = { lastMs: t, seq: 0 };
    else this.state = { lastMs: this.state.lastMs, seq: this.state.seq + 1 };
    return `${this.state.lastMs}-${this.state.seq}`;
  }

  snapshot(): EmitterClockState {
    return { ...this.state };
  }
}

/**
 * Normalises an `$emit` `ts` to epoch milliseconds: numbers below 1e11 are
 * seconds, numeric strings likewise, other strings are parsed as dates.
 * Returns undefined when the value cannot be read as a time.
 */
export function normalizeTs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? fromNumber(value) : undefined;
  if (typeof value === 'string') {
    const t = value.trim();
    if (t === '') return undefined;
    if (/^-?\d+(\.\d+)?$/.test(t)) return fromNumber(Number(t));
    const parsed = Date.parse(t);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.getTime();
  return undefined;
}

function fromNumber(n: number): number {
  return Math.round(Math.abs(n) < 1e11 ? n * 1000 : n);
}
