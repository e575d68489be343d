import { spawn } from 'node:child_process';
import { alive, eventually } from './support/system';

// The supervisor behind `npm start` (plain JS), run here against real child processes.
const { Supervisor } = require('../scripts/lib/supervisor') as { Supervisor: new (opts: Record<string, unknown>) => SupervisorLike };

interface SupervisorLike {
  add(name: string, spec: { command: string; args: string[]; env: NodeJS.ProcessEnv; healthy?: () => Promise<boolean> }): void;
  pid(name: string): number | undefined;
  stop(): Promise<void>;
  on(event: 'fatal', fn: (reason: string) => void): void;
  on(event: 'healthy', fn: (name: string, pid: number) => void): void;
}


describe('npm start supervisor', () => {
  const lines: string[] = [];
  let sup: SupervisorLike | undefined;
  const make = (opts: Record<string, unknown> = {}): SupervisorLike => {
    // The apps' output stays here: jest takes a worker's "heap out of memory" on stderr for its own crash.
    sup = new Supervisor({ log: (m: string) => lines.push(m), output: { write: () => true }, initialBackoffMs: 100, healthPollMs: 50, ...opts });
    sup.on('healthy', (_name, pid) => healthyPids.push(pid));
    return sup;
  };
  // Health as the apps report it: a process that has started its script says so; `never` never does.
  const node = (code: string, nodeArgs: string[] = [], { never = false } = {}) => {
    let ready = false;
    return {
      command: process.execPath,
      args: [...nodeArgs, '-e', code],
      env: { PATH: process.env.PATH },
      healthy: async () => !never && (ready ||= true),
    };
  };
  const healthyPids: number[] = [];
  const healthy = (pid: number) => eventually(async () => healthyPids.includes(pid), { what: `pid ${pid} healthy` });
  beforeEach(() => {
    lines.splice(0);
    healthyPids.splice(0);
  });
  afterEach(async () => sup?.stop());

  it('restarts an app killed with SIGKILL and says why', async () => {
    const s = make();
    // An ordinary last log line says nothing about a kill from outside: it is left out of the exit line.
    s.add('app', node('console.error("app listening on 3000"); setInterval(() => {}, 1000)'));
    const first = await eventually(async () => s.pid('app'), { what: 'the first start' });
    await healthy(first);
    process.kill(first, 'SIGKILL');
    const second = await eventually(async () => { const p = s.pid('app'); return p && p !== first ? p : undefined; }, { what: 'a new process' });
    expect(alive(second)).toBe(true);
    expect(lines.find((l) => l.startsWith('app exited'))).toMatch(/^app exited: killed by SIGKILL \(the out-of-memory killer, a container limit, or kill -9\) after \d+\.\d s; restarting in 0\.1 s \(restart 1\)$/);
    // Killed again soon after: the delay doubles.
    expect(lines).toContain(`app started (pid ${second}) — restart 1`);
    await healthy(second);
    expect(lines).toContain(`app is healthy again (pid ${second})`);
    process.kill(second, 'SIGKILL');
    await eventually(async () => lines.filter((l) => l.startsWith('app exited')).length === 2, { what: 'the second exit' });
    expect(lines.filter((l) => l.startsWith('app exited'))[1]).toMatch(/restarting in 0\.2 s \(restart 2\)$/);
    await eventually(async () => s.pid('app'), { what: 'the second restart' });
  });

  it('restarts an app stopped by someone else (SIGTERM, or exit code 0) too', async () => {
    const s = make();
    s.add('app', node('setInterval(() => {}, 1000)'));
    const first = await eventually(async () => s.pid('app'), { what: 'the first start' });
    await healthy(first);
    process.kill(first, 'SIGTERM');
    const second = await eventually(async () => { const p = s.pid('app'); return p && p !== first ? p : undefined; }, { what: 'a new process' });
    expect(lines.find((l) => l.startsWith('app exited'))).toMatch(/^app exited: killed by SIGTERM after [\d.]+ s; restarting in 0\.1 s \(restart 1\)$/);
    expect(alive(second)).toBe(true);
  });

  it('names running out of memory', async () => {
    const s = make();
    s.add('hog', node('setTimeout(() => { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }, 400)', ['--max-old-space-size=24']));
    const exit = await eventually(async () => lines.find((l) => l.startsWith('hog exited')), { what: 'the out-of-memory exit', timeoutMs: 30_000 });
    expect(exit).toMatch(/^hog exited: out of memory \((signal SIGABRT|exit code 134)\) after .*; last output: .*(heap out of memory|Allocation failed).*; restarting in 0\.1 s/);
  });

  it('stops everything when an app fails repeatedly at start, with the reason', async () => {
    const s = make({ maxStartFailures: 3 });
    const fatal = new Promise<string>((resolve) => s.on('fatal', resolve));
    s.add('steady', node('setInterval(() => {}, 1000)'));
    s.add('broken', node('console.error("delivery failed to start: DELIVERY_METRICS_PORT 9465 is taken (EADDRINUSE)"); process.exit(1)', [], { never: true }));
    const reason = await fatal;
    expect(reason).toBe('broken failed 3 times in a row while starting; the last time: exit code 1 after ' + reason.split(' after ')[1]);
    expect(reason).toMatch(/last output: delivery failed to start: DELIVERY_METRICS_PORT 9465 is taken \(EADDRINUSE\)$/);
    expect(lines.filter((l) => l.startsWith('broken exited'))).toEqual([
      expect.stringMatching(/restarting in 0\.1 s \(restart 1, 1 failed start in a row\)$/),
      expect.stringMatching(/restarting in 0\.2 s \(restart 2, 2 failed starts in a row\)$/),
    ]);
    // The caller stops the rest.
    const steady = s.pid('steady')!;
    await s.stop();
    expect(alive(steady)).toBe(false);
  });

  it('stop() ends every app and restarts none', async () => {
    const s = make();
    s.add('a', node('setInterval(() => {}, 1000)'));
    s.add('b', node('process.on("SIGTERM", () => setTimeout(() => process.exit(0), 200)); setInterval(() => {}, 1000)'));
    await eventually(async () => s.pid('a') && s.pid('b'), { what: 'both started' });
    const pids = [s.pid('a')!, s.pid('b')!];
    await s.stop();
    expect(pids.map(alive)).toEqual([false, false]);
    await new Promise((r) => setTimeout(r, 300));
    expect(lines.filter((l) => / started /.test(l))).toHaveLength(2);
  });
});

describe("npm start's own exit", () => {
  // What npm start copies from its apps waits in memory while its reader (a terminal, a pipe to a log collector)
  // is slow; CI once read 26 of the runner's 32 "partition lease released" lines after a Ctrl-C.
  const writeThenExit = () =>
    spawn(process.execPath, ['-e', `const { exitAfterOutput } = require(${JSON.stringify(require.resolve('../scripts/lib/infra'))});
      for (let i = 0; i < 2000; i++) process.stderr.write("released " + i + " " + "x".repeat(200) + "\\n");
      exitAfterOutput(3);`], { stdio: ['ignore', 'ignore', 'pipe'] });

  it('writes everything it was given before it exits, to a reader that reads late', async () => {
    const child = writeThenExit();
    let output = '';
    child.stderr!.pause();
    setTimeout(() => child.stderr!.resume(), 1000);
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise((r) => child.once('close', r));
    expect([code, output.match(/^released \d+ /gm)?.length]).toEqual([3, 2000]);
  });
});
