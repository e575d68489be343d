/**
 * Terminal output. Data goes to stdout (plain text or `--json`); progress,
 * spinners and notices go to stderr so scripts can pipe stdout safely.
 */
export function out(line = ''): void {
  process.stdout.write(line + '\n');
}

export function note(line: string): void {
  process.stderr.write(line + '\n');
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** One JSON document per line, for streams (`--json` with follow). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

const useColor = (): boolean => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
const paint = (code: number) => (s: string): string => (useColor() ? `\u001b[${code}m${s}\u001b[0m` : s);
export const dim = paint(2);
export const bold = paint(1);
export const green = paint(32);
export const red = paint(31);
export const yellow = paint(33);
export const cyan = paint(36);

/** Aligned columns; the header row is bold on a terminal. */
export function table(headers: string[], rows: string[][]): string {
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
  return shown.map(([k, v]) => `${(k + ':').padEnd(width)} ${v}`).join('\n');
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
    process.stderr.write(`\r\u001b[2K${cyan(FRAMES[i++ % FRAMES.length])} ${current}`);
  };
  const timer = setInterval(draw, 80);
  timer.unref();
  draw();
  const end = (symbol: string, final?: string): void => {
    clearInterval(timer);
    process.stderr.write(`\r\u001b[2K${symbol ? `${symbol} ${final ?? current}\n` : ''}`);
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

export function formatTime(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '';
  return new Date(ms).toISOString();
}
