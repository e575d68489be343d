import { readFileSync, statfsSync } from 'node:fs';

const PAGE_BYTES = 4096;

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function rssBytes(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES;
  } catch {
    return 0;
  }
}

/** Resident memory of a process and all its descendants (the sandbox host under bubblewrap), in bytes. */
export function treeRssBytes(pid: number): number {
  let total = 0;
  const todo = [pid];
  for (let n = 0; todo.length && n < 64; n++) {
    const p = todo.pop()!;
    total += rssBytes(p);
    todo.push(...children(p));
  }
  return total;
}

/**
 * Bytes held in the /tmp of the sandbox that bubblewrap process `pid` runs: a tmpfs, so memory, which no process's
 * resident memory counts. Read through the mount namespace of bubblewrap's child (the sandbox's first process); 0
 * when it cannot be read.
 */
export function sandboxTmpBytes(pid: number): number {
  const inner = children(pid)[0];
  if (!inner) return 0;
  try {
    const s = statfsSync(`/proc/${inner}/root/tmp`);
    return (s.blocks - s.bfree) * s.bsize;
  } catch {
    return 0;
  }
}
