import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PD_BIN = join(__dirname, '..', '..', 'bin', 'pd.js');

export interface PdResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A temporary HOME, so the CLI's config lives in `<home>/.config/pipedream/config`. */
export function tempHome(): string {
  return mkdtempSync(join(tmpdir(), 'pd-home-'));
}

/** The environment of a `pd` child: only PATH, HOME and what the test passes (no PD_* leaks in). */
export function pdEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1', ...extra };
}

/** Runs the real `bin/pd.js` to completion. */
export function pd(args: string[], home: string, extra: Record<string, string> = {}, cwd?: string): Promise<PdResult> {
  return pdAt(PD_BIN, args, home, extra, cwd);
}

/** Runs a `pd.js` at another path (a copy outside the repository) to completion. */
export function pdAt(bin: string, args: string[], home: string, extra: Record<string, string> = {}, cwd?: string): Promise<PdResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: pdEnv(home, extra), cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running `pd` (dev, events -f, logs) whose output the test watches. */
export interface PdProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends SIGINT (Ctrl-C) and resolves with the exit code. */
  interrupt(): Promise<number | null>;
}

export function pdSpawn(args: string[], home: string, extra: Record<string, string> = {}, cwd?: string): PdProcess {
  const child = spawn(process.execPath, [PD_BIN, ...args], { env: pdEnv(home, extra), cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    interrupt: async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** A `pd` on a pseudo-terminal: what a user at a terminal sees, stdout and stderr in one stream. */
export interface PdTerminal {
  /** Everything written to the terminal so far, its `\r\n` line ends (the terminal's) read as `\n`. */
  output(): string;
  /** Types on the terminal: `\x03` is Ctrl-C. */
  type(text: string): void;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * Runs `bin/pd.js` on a pseudo-terminal (util-linux `script`), with colours on (no NO_COLOR): stdin,
 * stdout and stderr are a terminal, so pd colours its output and draws its spinners.
 */
export function pdTerminal(args: string[], home: string, extra: Record<string, string> = {}, cwd?: string): PdTerminal {
  const { NO_COLOR: _, ...env } = pdEnv(home, extra);
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = `exec ${[process.execPath, PD_BIN, ...args].map(quote).join(' ')}`;
  const child = spawn('script', ['-qefc', command, '/dev/null'], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => {
    clearTimeout(timer);
    resolve(code);
  }));
  return { output: () => output.replace(/\r\n/g, '\n'), type: (text) => child.stdin.write(text), exited };
}
