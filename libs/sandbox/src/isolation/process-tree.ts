import { readFileSync } from 'node:fs';

/** The children of process `pid` (none when it is gone). */
export function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The processes `pid` started and theirs, at most 64 (a sandbox holds a handful). */
export function descendants(pid: number): number[] {
  const found: number[] = [];
  const todo = children(pid);
  while (todo.length && found.length < 64) {
    const p = todo.pop()!;
    found.push(p);
    todo.push(...children(p));
  }
  return found;
}

/** Sends `signal` to `pid`; false when it is gone (or not ours to signal). */
function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * Kills process `pid` (a sandbox's bubblewrap) and every process it started. Killing bubblewrap alone is not enough in
 * its first milliseconds: its child, the first process of the sandbox's PID namespace, waits on an eventfd for its
 * parent to set it up, and with its parent killed it waited for good, reparented to the machine's init
 * (`--die-with-parent` does not reach it yet): 61 of 200 sandboxes killed 0–5 ms after their start were left so. The
 * parent is stopped first, so that it starts nothing between the look at its children and their kill; the kill of a
 * PID namespace's first process ends every process in it.
 */
export function killTree(pid: number): void {
  if (!signal(pid, 'SIGSTOP')) return;
  for (const p of descendants(pid)) signal(p, 'SIGKILL');
  signal(pid, 'SIGKILL');
}
