import { eventually } from './support/system';

// The supervisor behind `npm start` (plain JS), run here against real child processes.
const { Supervisor } = require('../scripts/lib/supervisor') as { Supervisor: new (opts: Record<string, unknown>) => SupervisorLike };

interface SupervisorLike {
  add(name: string, spec: { command: string; args: string[]; env: NodeJS.ProcessEnv; healthy?: () => Promise<boolean> }): void;
  pid(name: string): number | undefined;
  stop(): Promise<void>;
  on(event: 'fatal', fn: (reason: string) => void): void;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start supervisor', () => {
  const lines: string[] = [];
  let sup: SupervisorLike | undefined;
  const make = (opts: Record<string, unknown> = {}): SupervisorLike =>
    (sup = new Supervisor({ log: (m: string) => lines.push(m), initialBackoffMs: 100, startGraceMs: 300, healthPollMs: 50, ...opts }));
  const node = (code: string, nodeArgs: string[] = []) => ({ command: process.execPath, args: [...nodeArgs, '-e', code], env: { PATH: process.env.PATH } });
  beforeEach(() => lines.splice(0));
  afterEach(async () => sup?.stop());

  it('restarts an app killed with SIGKILL and says why', async () => {
    const s = make();
    s.add('app', node('setInterval(() => {}, 1000)'));
    await eventually(async () => lines.some((l) => l.startsWith('app started')), { what: 'the first start' });
    await new Promise((r) => setTimeout(r, 400)); // past the start grace: it counts as started
    const first = s.pid('app')!;
    process.kill(first, 'SIGKILL');
    const second = await eventually(async () => { const p = s.pid('app'); return p && p !== first ? p : undefined; }, { what: 'a new process' });
    expect(alive(second)).toBe(true);
    expect(lines.find((l) => l.startsWith('app exited'))).toMatch(/^app exited: killed by SIGKILL \(the out-of-memory killer, a container limit, or kill -9\) after \d+\.\d s; restarting in 0\.1 s \(restart 1\)$/);
    // Killed again soon after: the delay doubles.
    await eventually(async () => lines.some((l) => l === `app started (pid ${second}) — restart 1`), { what: 'the restart line' });
    await new Promise((r) => setTimeout(r, 400));
    process.kill(second, 'SIGKILL');
    await eventually(async () => lines.filter((l) => l.startsWith('app exited')).length === 2, { what: 'the second exit' });
    expect(lines.filter((l) => l.startsWith('app exited'))[1]).toMatch(/restarting in 0\.2 s \(restart 2\)$/);
    await eventually(async () => s.pid('app'), { what: 'the second restart' });
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
    s.add('broken', node('console.error("delivery failed to start: DELIVERY_METRICS_PORT 9465 is taken (EADDRINUSE)"); process.exit(1)'));
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
