'use strict';
// What the kernel counts for a process, read from /proc (Linux): CPU time split into user and
// kernel, read and write system calls, context switches, and CPU time per thread (the main thread
// against the others: V8's GC and compiler helpers, libuv's pool, a sandbox's worker threads).
// `take(groups)` reads them now for named groups of processes; `perEvent(before, after, events)` turns
// two readings into figures per event. A process that is gone by the second reading is left out.
const fs = require('node:fs');

const TICK_US = 1e6 / 100; // USER_HZ

/** The fields after the command name of a /proc/<pid>[/task/<tid>]/stat file (field 3, the state, first). */
function statFields(statFile) {
  const stat = fs.readFileSync(statFile, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime and stime (clock ticks) of a stat file. */
function ticks(statFile) {
  const fields = statFields(statFile);
  return { user: Number(fields[11]), kernel: Number(fields[12]) };
}

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
function cpuSeconds(pid) {
  try {
    const t = ticks(`/proc/${pid}/stat`);
    return (t.user + t.kernel) / 100;
  } catch {
    return NaN;
  }
}

/** A number field (`name: 123`) of a /proc status or io file's text, 0 when absent. */
const field = (text, name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);

/** The counters of one process (all its threads), or undefined when it is gone. */
function readProcess(pid) {
  try {
    const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
    const total = ticks(`/proc/${pid}/stat`);
    let mainThread = 0;
    let contextSwitches = 0;
    let rssKb = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const status = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
        contextSwitches += field(status, 'voluntary_ctxt_switches') + field(status, 'nonvoluntary_ctxt_switches');
        if (Number(tid) !== pid) continue;
        const t = ticks(`/proc/${pid}/task/${tid}/stat`);
        mainThread = t.user + t.kernel;
        rssKb = field(status, 'VmRSS'); // the process's, as every thread's status gives it
      } catch {
        // the thread ended meanwhile
      }
    }
    return { user: total.user, kernel: total.kernel, mainThread, contextSwitches, reads: field(io, 'syscr'), writes: field(io, 'syscw'), rssKb };
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
      const ppid = Number(statFields(`/proc/${d}/stat`)[1]);
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

module.exports = { take, perEvent, processTree, pidsMatching, cpuSeconds };
