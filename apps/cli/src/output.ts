/**
 * Terminal output. Data goes to stdout (plain text or `--json`); progress,
 * spinners and notices go to stderr so scripts can pipe stdout safely.
 *
 * Names, summaries, log lines and error messages come from the API: a tenant, or anyone who posts to an
 * endpoint, chose them. What a terminal acts on instead of showing — C0 controls but tab and line feed,
 * DEL, C1 controls (U+009B is a CSI) and the bidi overrides and isolates — is written as an escape
 * (`\x1b`, `\u202e`), so such text cannot move the cursor, clear the screen, set the window title or the
 * clipboard, or reorder or hide what follows it. Only this module's own colours reach the terminal as such.
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const CONTROL_OR_BREAK = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
/** The colour codes `paint` writes; on a terminal with colours, only these escape sequences pass. */
const PALETTE = new Set(['0', '1', '2', '31', '32', '33', '36']);
const OWN_COLOUR_OR_CONTROL = new RegExp(`\u001b\\[(\\d{1,2})m|${CONTROL.source}`, 'g');

const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const escaped = (c: string): string => {
  const n = c.charCodeAt(0);
  return NAMED[c] ?? (n < 0x100 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`);
};

/** Text shown on one line (a name, a summary, a table cell): line breaks and tabs are escaped too. */
export function oneLine(text: string): string {
  return text.replace(CONTROL_OR_BREAK, escaped);
}

/** Text that may span lines (a log message, a stack): every control but tab and line feed escaped. */
export function multiLine(text: string): string {
  return text.replace(CONTROL, escaped);
}

/**
 * A line on its way to the terminal: controls escaped, this module's colours kept when colours are on. It cannot
 * tell those colours from the same codes in a value: a value from the API is put in a line through `oneLine` or
 * `multiLine` (before it is coloured), never as it is.
 */
export function forTerminal(text: string, colours = useColor()): string {
  return text.replace(OWN_COLOUR_OR_CONTROL, (m: string, code?: string) => (code !== undefined && colours && PALETTE.has(code) ? m : m.replace(CONTROL, escaped)));
}

export function out(line = ''): void {
  process.stdout.write(forTerminal(line) + '\n');
}

export function note(line: string): void {
  process.stderr.write(forTerminal(line) + '\n');
}

/**
 * JSON escapes C0 controls but not C1 controls nor bidi overrides; those are written as `\u` escapes here
 * (the same JSON once parsed), as they appear only inside strings.
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'undefined').replace(/[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function printJson(value: unknown): void {
  process.stdout.write(jsonText(value, 2) + '\n');
}

/** One JSON document per line, for streams (`--json` with follow). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(jsonText(value) + '\n');
}

const useColor = (): boolean => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
const paint = (code: number) => (s: string): string => (useColor() ? `\u001b[${code}m${s}\u001b[0m` : s);
export const dim = paint(2);
export const bold = paint(1);
export const green = paint(32);
export const red = paint(31);
export const yellow = paint(33);
export const cyan = paint(36);

/** Aligned columns; the header row is bold on a terminal. Cells are shown on one line. */
export function table(headers: string[], tableRows: string[][]): string {
  const rows = tableRows.map((r) => r.map(oneLine));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [bold(line(headers)), ...rows.map(line)].join('\n');
}

/** `key: value` lines with aligned values. */
export function fields(pairs: Array<[string, string | undefined]>): string {
  const shown = pairs.filter((p): p is [string, string] => p[1] !== undefined && p[1] !== '');
  const width = Math.max(...shown.map(([k]) => k.length)) + 1;
  return shown.map(([k, v]) => `${(k + ':').padEnd(width)} ${oneLine(v)}`).join('\n');
}

export interface Spinner {
  update(text: string): void;
  succeed(text?: string): void;
  fail(text?: string): void;
  stop(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** A spinner on stderr when it is a terminal; silent otherwise (no noise in logs and pipes). */
export function spinner(text: string, enabled = Boolean(process.stderr.isTTY)): Spinner {
  if (!enabled) return { update: () => undefined, succeed: () => undefined, fail: () => undefined, stop: () => undefined };
  let current = text;
  let i = 0;
  const draw = (): void => {
    process.stderr.write(`\r\u001b[2K${cyan(FRAMES[i++ % FRAMES.length])} ${oneLine(current)}`);
  };
  const timer = setInterval(draw, 80);
  timer.unref();
  draw();
  const end = (symbol: string, final?: string): void => {
    clearInterval(timer);
    process.stderr.write(`\r\u001b[2K${symbol ? `${symbol} ${oneLine(final ?? current)}\n` : ''}`);
  };
  return {
    update: (t) => {
      current = t;
    },
    succeed: (t) => end(green('✔'), t),
    fail: (t) => end(red('✖'), t),
    stop: () => end(''),
  };
}

/** Runs `work` under a spinner that succeeds or fails with it. */
export async function withSpinner<T>(text: string, work: () => Promise<T>, done?: string): Promise<T> {
  const s = spinner(text);
  try {
    const result = await work();
    s.succeed(done ?? text);
    return result;
  } catch (e) {
    s.fail();
    throw e;
  }
}

/** An ISO time; '' for what is not one (a log line's `ts` is whatever its source wrote). */
export function formatTime(ms: number | undefined): string {
  const date = new Date(ms ?? NaN);
  return Number.isNaN(date.getTime()) ? '' : date.toISOString();
}
