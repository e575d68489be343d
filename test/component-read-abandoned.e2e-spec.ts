import { readdirSync, readFileSync } from 'node:fs';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * Component reads whose client went away. 30 `POST /v1/components` of code whose top level awaits, then loops for
 * ever, each abandoned by its client after 3 s: the api ran the 8 it had taken (API_MAX_CONCURRENT_PER_KEY) one after
 * another in the account's sandbox, COMPONENT_READ_TIMEOUT_MS (60 s) each, a core busy for minutes and the key
 * refused 429 meanwhile. Now a read is cancelled with its client: its sandbox process is stopped, its turn ends.
 */
const MAX_PER_KEY = 2;
const loop = (i: number): string => `export default { name: "Loop ${i}", version: "0.0.1", async run() {} };\nawait Promise.resolve();\nfor (;;) {}\n`;
const FINE = 'export default { name: "Fine", version: "0.0.1", async run() {} };';

const children = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/** CPU time (clock ticks) of the sandbox host processes under an app process (node running host-main.js), together. */
function sandboxTicks(appPid: number): number {
  let ticks = 0;
  const todo = [appPid];
  while (todo.length) {
    for (const c of children(todo.pop()!)) {
      try {
        const cmd = readFileSync(`/proc/${c}/cmdline`, 'utf8');
        if (!cmd.includes('host-main.js') || cmd.includes('bwrap')) {
          todo.push(c);
          continue;
        }
        for (const tid of readdirSync(`/proc/${c}/task`)) {
          const fields = readFileSync(`/proc/${c}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
          ticks += Number(fields[11]) + Number(fields[12]);
        }
      } catch {
        // the process or thread ended
      }
    }
  }
  return ticks;
}

describe('component reads abandoned by their clients', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_READ_TIMEOUT_MS: '60000', API_MAX_CONCURRENT_PER_KEY: String(MAX_PER_KEY), REGISTRY_DIR: 'off' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('stops the sandbox running them and frees their turns: the next read of the key is answered, not refused 429', async () => {
    const user = createUser(system);
    const abandoned = Array.from({ length: MAX_PER_KEY * 2 }, (_, i) =>
      fetch(`${system.baseUrl}/components`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ component_code: loop(i) }),
        signal: AbortSignal.timeout(3000),
      }).then(
        (r) => `answered ${r.status}`,
        (e: Error) => e.name,
      ),
    );
    // Meanwhile the reads loop in the account's sandbox.
    const api = system.procs.get('api')!.pid!;
    await new Promise((r) => setTimeout(r, 1500));
    const busy = sandboxTicks(api);
    await new Promise((r) => setTimeout(r, 1000));
    expect(sandboxTicks(api) - busy).toBeGreaterThan(0);
    expect(await Promise.all(abandoned)).toEqual(Array(MAX_PER_KEY * 2).fill('TimeoutError'));

    // The api's sandbox stops burning CPU (less than a tenth of a core over a second) once the clients left, long before
    // the reads' COMPONENT_READ_TIMEOUT_MS (60 s, one after another: four minutes of a core).
    await eventually(
      async () => {
        const before = sandboxTicks(api);
        await new Promise((r) => setTimeout(r, 1000));
        return sandboxTicks(api) - before < 10;
      },
      { timeoutMs: 30_000, what: "the api's sandbox to go quiet" },
    );

    // The key's turns are free: a read of sound code gets one within API_QUEUE_WAIT_MS (10 s), not 429.
    const res = await client(system, user.apiKey).post('/components', { component_code: FINE });
    expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
  }, 90_000);
});

describe('component reads while the api shuts down', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_READ_TIMEOUT_MS: '5000', API_MAX_CONCURRENT_PER_KEY: '1', REGISTRY_DIR: 'off' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('starts none and stops those running: both are answered 503, the api does not wait for their code', async () => {
    const user = createUser(system);
    const read = (i: number) =>
      fetch(`${system.baseUrl}/components`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ component_code: loop(i) }),
      }).then(
        async (r) => ({ status: r.status, body: (await r.json()) as { code?: string } }),
        (e: Error) => ({ status: 0, body: { code: e.message } }),
      );
    // The first takes the key's one turn (its read loops until COMPONENT_READ_TIMEOUT_MS); the second waits for it.
    const first = read(1);
    await new Promise((r) => setTimeout(r, 1500));
    const second = read(2);
    await new Promise((r) => setTimeout(r, 500));
    const stopping = system.stopApp('api');
    const [a, b] = await Promise.all([first, second]);
    await stopping;
    // Not the first read's timeout (400 after COMPONENT_READ_TIMEOUT_MS), nor the second read run during shutdown.
    expect(a).toEqual({ status: 503, body: expect.objectContaining({ code: 'unavailable' }) });
    expect(b).toEqual({ status: 503, body: expect.objectContaining({ code: 'unavailable' }) });
  }, 60_000);
});
