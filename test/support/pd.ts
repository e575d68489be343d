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
