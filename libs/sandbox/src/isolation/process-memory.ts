import { readFileSync, statfsSync } from 'node:fs';
import { children, descendants } from './process-tree';

const PAGE_BYTES = 4096;

function rssBytes(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES;
  } catch {
    return 0;
  }
}

/** Resident memory of a process and all its descendants (the sandbox host under bubblewrap), in bytes. */
export function treeRssBytes(pid: number): number {
  return [pid, ...descendants(pid)].reduce((total, p) => total + rssBytes(p), 0);
}

/**
 * Kernel memory one file or directory of a tmpfs holds however empty (its inode and directory entry: about 800 bytes
 * measured), which the tmpfs's size does not bound: its default count of inodes is half the machine's pages, and three
 * million empty files in one sandbox's /tmp held 2.4 GiB.
 */
export const TMP_FILE_BYTES = 1024;

/** What the /tmp of a sandbox holds: the bytes of its files (bounded by SANDBOX_TMP_MB) and how many files it has. */
export interface TmpUse {
  dataBytes: number;
  files: number;
}

const TMPFS_MAGIC = 0x01021994;

/**
 * What the /tmp of the sandbox that bubblewrap process `pid` runs holds: a tmpfs of `sizeBytes` (SANDBOX_TMP_MB), so
 * memory, which no process's resident memory counts. Read through the mount namespace of bubblewrap's child (the
 * sandbox's first process); nothing when it cannot be read, or is not yet that tmpfs: while bubblewrap sets the sandbox
 * up, its child's root is still the app's, whose /tmp (a disk's millions of files) once counted against a sandbox
 * starting up and had it stopped as over its memory limit.
 */
export function sandboxTmp(pid: number, sizeBytes: number): TmpUse {
  const inner = children(pid)[0];
  if (!inner) return { dataBytes: 0, files: 0 };
  try {
    const s = statfsSync(`/proc/${inner}/root/tmp`);
    if (s.type !== TMPFS_MAGIC || s.blocks * s.bsize !== sizeBytes) return { dataBytes: 0, files: 0 };
    return { dataBytes: (s.blocks - s.bfree) * s.bsize, files: s.files - s.ffree };
  } catch {
    return { dataBytes: 0, files: 0 };
  }
}
