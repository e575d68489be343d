'use strict';
// Keeps `npm start`'s apps running: an app that dies (SIGKILL, out of memory, a
// crash) is started again after a backoff, with a log line saying why it died.
// Everything stops only on stop() (Ctrl-C) or when an app fails repeatedly
// while starting: then 'fatal' is emitted with the reason (its last output).
const { spawn } = require('node:child_process');
const { EventEmitter } = require('node:events');

const DEFAULTS = {
  /** First restart delay; doubled per consecutive failure up to maxBackoffMs. */
  initialBackoffMs: 500,
  maxBackoffMs: 30_000,
  /** An app that stayed up (healthy) this long has its failure count reset. */
  stableMs: 60_000,
  /** Consecutive exits before the app ever became healthy that stop everything. */
  maxStartFailures: 5,
  /** How often health is polled while an app starts. */
  healthPollMs: 250,
  /** An app without a health check counts as started after running this long. */
  startGraceMs: 5_000,
  /** SIGTERM, then SIGKILL after this on stop(). */
  stopTimeoutMs: 15_000,
  /** Bytes of each app's recent stderr kept to explain an exit. */
  tailBytes: 4096,
};

/** Why a process ended, in words, from its exit code or signal and its last output. */
function describeExit(code, signal, tail) {
  const oom = /heap out of memory|Allocation failed|ENOMEM|out of memory/i.test(tail);
  if (signal === 'SIGKILL') return 'killed by SIGKILL (the out-of-memory killer, a container limit, or kill -9)';
  if (oom) return `out of memory (${signal ? `signal ${signal}` : `exit code ${code}`})`;
  if (signal) return `killed by ${signal}`;
  return `exit code ${code}`;
}

/**
 * The line of an app's last output that best explains its end: a fatal error, else an error, else (with
 * `orLast`) the last line; stack frames skipped.
 */
function lastWords(tail, orLast = true) {
  const lines = tail
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^(\d+:\s+0x|at\s|<-+|=+|\^)/.test(l));
  const fromEnd = [...lines].reverse();
  const pick = fromEnd.find((l) => /FATAL ERROR/.test(l)) ?? fromEnd.find((l) => /error|fail|fatal|cannot|refused|invalid|EADDRINUSE/i.test(l)) ?? (orLast ? lines.at(-1) : undefined);
  if (!pick) return '';
  // pino lines: show the message (and err) rather than the whole JSON.
  try {
    const j = JSON.parse(pick);
    return [j.msg, j.err].filter(Boolean).join(': ').slice(0, 500);
  } catch {
    return pick.slice(0, 500);
  }
}

class Supervisor extends EventEmitter {
  /**
   * @param {object} opts
   * @param {(msg: string) => void} opts.log
   * @param {{ write(chunk: Buffer): unknown }} [opts.output] where the apps' stderr goes (default: this process's stderr)
   * @param {boolean} [opts.stdoutToOutput] the apps' stdout goes to `output` too (default: this process's stdout)
   * Other options: see DEFAULTS.
   */
  constructor(opts) {
    super();
    this.opts = { ...DEFAULTS, ...opts };
    this.log = opts.log;
    this.output = opts.output ?? process.stderr;
    /** name → app state */
    this.apps = new Map();
    this.stopping = false;
  }

  /**
   * Starts `name` and keeps it running.
   * spec: { command, args, env, healthy?: (pid) => Promise<boolean> } (`pid`: the process being judged)
   */
  add(name, spec) {
    const app = { name, spec, child: undefined, failures: 0, startFailures: 0, restarts: 0, startedAt: 0, healthyAt: 0, tail: '', timer: undefined, judging: undefined };
    this.apps.set(name, app);
    this.spawn(app);
    return app;
  }

  /** pid of an app's current process (undefined while it is restarting). */
  pid(name) {
    return this.apps.get(name)?.child?.pid;
  }

  spawn(app) {
    const { command, args, env } = app.spec;
    const child = spawn(command, args, { env, stdio: ['ignore', this.opts.stdoutToOutput ? 'pipe' : 'inherit', 'pipe'] });
    if (this.opts.stdoutToOutput) child.stdout.on('data', (d) => this.output.write(d));
    app.child = child;
    app.startedAt = Date.now();
    app.healthyAt = 0;
    app.tail = '';
    child.stderr.on('data', (d) => {
      this.output.write(d);
      app.tail = (app.tail + d.toString('utf8')).slice(-this.opts.tailBytes);
    });
    child.on('error', (e) => {
      app.tail += `\n${e.message}`;
    });
    child.once('exit', (code, signal) => this.exited(app, child, code, signal));
    this.log(`${app.name} started (pid ${child.pid})${app.restarts ? ` — restart ${app.restarts}` : ''}`);
    void this.watchHealth(app, child);
  }

  async watchHealth(app, child) {
    const alive = () => app.child === child && child.exitCode === null && child.signalCode === null && !this.stopping;
    const healthy = app.spec.healthy ?? (async () => Date.now() - app.startedAt >= this.opts.startGraceMs);
    while (alive()) {
      if (await healthy(child.pid).catch(() => false)) break;
      await sleep(this.opts.healthPollMs);
    }
    if (!alive()) return;
    app.healthyAt = Date.now();
    app.startFailures = 0;
    if (app.restarts) this.log(`${app.name} is healthy again (pid ${child.pid})`);
    this.emit('healthy', app.name, child.pid);
    // Up for a while: the next crash starts the backoff from the beginning.
    const stable = setTimeout(() => {
      if (alive()) app.failures = 0;
    }, this.opts.stableMs);
    stable.unref();
  }

  exited(app, child, code, signal) {
    if (this.stopping || app.child !== child) return;
    // Ctrl-C in a terminal reaches the apps too (one process group): an app may stop on it before our own
    // handler has run. A clean stop is judged a moment later, when stop() has had its chance.
    if (!app.judging && (code === 0 || signal === 'SIGINT' || signal === 'SIGTERM')) {
      app.judging = setTimeout(() => this.exited(app, child, code, signal), 250);
      return;
    }
    app.judging = undefined;
    app.child = undefined;
    const upMs = Date.now() - app.startedAt;
    const why = describeExit(code, signal, app.tail);
    // Killed from outside, its last ordinary log line says nothing about why.
    const words = lastWords(app.tail, !signal);
    const detail = `${why} after ${(upMs / 1000).toFixed(1)} s${words ? `; last output: ${words}` : ''}`;
    app.failures++;
    if (!app.healthyAt) app.startFailures++;
    this.emit('exit', app.name, { code, signal, reason: why, upMs });
    if (app.startFailures >= this.opts.maxStartFailures) {
      const reason = `${app.name} failed ${app.startFailures} times in a row while starting; the last time: ${detail}`;
      this.log(reason);
      this.emit('fatal', reason);
      return;
    }
    const delay = Math.min(this.opts.maxBackoffMs, this.opts.initialBackoffMs * 2 ** (app.failures - 1));
    app.restarts++;
    this.log(`${app.name} exited: ${detail}; restarting in ${(delay / 1000).toFixed(1)} s (restart ${app.restarts}${app.startFailures ? `, ${app.startFailures} failed start${app.startFailures > 1 ? 's' : ''} in a row` : ''})`);
    app.timer = setTimeout(() => {
      app.timer = undefined;
      if (!this.stopping) this.spawn(app);
    }, delay);
  }

  /** Stops every app: SIGTERM, SIGKILL after stopTimeoutMs. No restarts from here on. */
  async stop() {
    this.stopping = true;
    await Promise.all(
      [...this.apps.values()].map((app) => {
        clearTimeout(app.timer);
        clearTimeout(app.judging);
        const c = app.child;
        if (!c || c.exitCode !== null || c.signalCode !== null) return undefined;
        return new Promise((resolve) => {
          const t = setTimeout(() => c.kill('SIGKILL'), this.opts.stopTimeoutMs);
          c.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
          c.kill('SIGTERM');
        });
      }),
    );
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

module.exports = { Supervisor, describeExit, lastWords };
