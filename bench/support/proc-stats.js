'use strict';
// What the kernel counts for a process, read from /proc (Linux): CPU time split into user and
// kernel, read and write system calls, context switches, and CPU time per thread (the main thread
// against the others: V8's GC and compiler helpers, libuv's pool, a sandbox's worker threads).
// `take(pids)` reads them now; `perEvent(before, after, events)` turns two readings into figures
// per event. A process that is gone by the second reading is left out.
const fs = require('node:fs');

const TICK_US = 1e6 / 100; // USER_HZ

/** utime and stime (clock ticks) of a /proc/<pid>[/task/<tid>]/stat file. */
function ticks(statFile) {
  const stat = fs.readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]), kernel: Number(fields[12]) };
}

/** Voluntary plus involuntary context switches of one thread. */
function switches(statusFile) {
  const status = fs.readFileSync(statusFile, 'utf8');
  const count = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return count('voluntary_ctxt_switches') + count('nonvoluntary_ctxt_switches');
}

/** The counters of one process (all its threads), or undefined when it is gone. */
function readProcess(pid) {
  try {
    const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
    const syscalls = (name) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
    const total = ticks(`/proc/${pid}/stat`);
    let mainThread = 0;
    let contextSwitches = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        if (Number(tid) === pid) mainThread = ((t) => t.user + t.kernel)(ticks(`/proc/${pid}/task/${tid}/stat`));
        contextSwitches += switches(`/proc/${pid}/task/${tid}/status`);
      } catch {
        // the thread ended meanwhile
      }
    }
    const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return { user: total.user, kernel: total.kernel, mainThread, contextSwitches, reads: syscalls('syscr'), writes: syscalls('syscw'), rssKb };
  } catch {
    return undefined;
  }
}

/** Readings of named process groups: `groups` maps a name to the pids it has now (a function, read at each call). */
function take(groups) {
  const out = {};
  for (const [name, pids] of Object.entries(groups)) {
    out[name] = new Map();
    for (const pid of pids()) {
      const r = readProcess(pid);
      if (r) out[name].set(pid, r);
    }
  }
  return out;
}

/**
 * Per event, for each group, between two readings: CPU µs (and its kernel part), CPU µs of the
 * processes' main threads and of their other threads, read and write system calls, context switches;
 * and the group's resident memory at the second reading.
 * Processes only in the second reading (started meanwhile) count from zero.
 */
function perEvent(before, after, events) {
  const zero = { user: 0, kernel: 0, mainThread: 0, contextSwitches: 0, reads: 0, writes: 0 };
  return Object.entries(after).map(([name, procs]) => {
    const sum = { ...zero };
    let rssKb = 0;
    for (const [pid, now] of procs) {
      const then = before[name]?.get(pid) ?? zero;
      for (const k of Object.keys(sum)) sum[k] += now[k] - then[k];
      rssKb += now.rssKb;
    }
    const us = (t) => (t * TICK_US) / events;
    return {
      name,
      cpuUs: us(sum.user + sum.kernel),
      kernelUs: us(sum.kernel),
      mainThreadUs: us(sum.mainThread),
      otherThreadsUs: us(sum.user + sum.kernel - sum.mainThread),
      reads: sum.reads / events,
      writes: sum.writes / events,
      contextSwitches: sum.contextSwitches / events,
      rssMb: rssKb / 1024,
    };
  });
}

/** Pids of `pid` and all its descendants alive now. */
function processTree(pid) {
  const children = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(d));
    } catch {
      // gone
    }
  }
  const out = [];
  const todo = [pid];
  while (todo.length) {
    const p = todo.pop();
    out.push(p);
    todo.push(...(children.get(p) || []));
  }
  return out;
}

/** Pids whose command line contains `needle`. */
function pidsMatching(needle) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(needle)) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

module.exports = { take, perEvent, processTree, pidsMatching };
