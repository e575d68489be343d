import type { LookupAddress } from 'node:dns';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RateBudget } from '@app/contracts';
import { AccountSlots } from '@app/net';
import { EgressProxy, type EgressBudgets, type EgressProxyOptions } from './egress-proxy';
import { EgressJudge } from './egress-rules';

interface Answer {
  ok?: boolean;
  code?: string;
  message?: string;
  retryMs?: number;
}

/** Asks a proxy's control socket for host:port as code that bypasses the in-sandbox client would. */
function ask(proxy: EgressProxy, host: string, port: number): Promise<Answer> {
  return new Promise((resolve) => {
    const s = connect({ path: proxy.socketPath });
    let b = '';
    s.on('data', (d) => (b += d));
    s.on('error', () => undefined);
    s.on('close', () => resolve(JSON.parse(b.split('\n')[0] || '{}') as Answer));
    s.write(`${JSON.stringify({ host, port })}\n`);
  });
}

/** Waits (a turn of the event loop at a time) until `done()` holds. */
async function eventually(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 5));
}

/** A budget that refills one token in 100 s: within a test, its burst is all there is. */
const burstOnly = (n: number): RateBudget => new RateBudget(0.01, n);

describe("EgressProxy: bounds of an account's requests", () => {
  const dirs: string[] = [];
  const proxies: EgressProxy[] = [];
  let server: Server;
  let port: number;

  const start = async (account: string, budgets: EgressBudgets, resolve?: EgressProxyOptions['resolve']): Promise<EgressProxy> => {
    const dir = mkdtempSync(join(tmpdir(), 'egress-spec-'));
    dirs.push(dir);
    const judge = new EgressJudge({ policy: { allowLoopback: true, allowPrivate: false }, allow: [], deny: [] });
    const proxy = new EgressProxy({ dir, judge, account, budgets, resolve });
    await proxy.start();
    proxies.push(proxy);
    return proxy;
  };

  beforeAll(async () => {
    server = createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    for (const p of proxies) p.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    server.close();
  });

  it("answers an account's refused requests past its budget at once, naming the setting; another account's are judged", async () => {
    const budgets: EgressBudgets = { refused: burstOnly(5), connects: burstOnly(1000) };
    const a = await start('a', budgets);
    const b = await start('b', budgets);
    const answers: Answer[] = [];
    for (let i = 0; i < 12; i++) answers.push(await ask(a, '10.1.2.3', 80));
    expect(answers.slice(0, 5).map((x) => x.message)).toEqual(new Array(5).fill(expect.stringMatching(/10\.1\.2\.3:80: .*private address/)));
    for (const x of answers.slice(5)) {
      expect(x).toMatchObject({ ok: false, code: 'ECONNREFUSED', message: expect.stringMatching(/too many refused connections \(SANDBOX_EGRESS_REFUSED_PER_SECOND\)/), retryMs: expect.any(Number) });
    }
    // Allowed connections of the account wait too: the proxy does not read its requests until the budget refilled.
    expect((await ask(a, '127.0.0.1', port)).message).toMatch(/SANDBOX_EGRESS_REFUSED_PER_SECOND/);
    expect((await ask(b, '10.1.2.3', 80)).message).toMatch(/private address/);
    expect(await ask(b, '127.0.0.1', port)).toMatchObject({ ok: true });
  });

  it('counts a name with no address and a malformed request as refused', async () => {
    const notFound = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
    const a = await start('names', { refused: burstOnly(2) }, notFound);
    expect((await ask(a, 'no-such-name.invalid', 80)).code).toBe('ENOTFOUND');
    expect((await ask(a, '', 0)).code).toBe('EINVAL');
    expect((await ask(a, '127.0.0.1', port)).message).toMatch(/SANDBOX_EGRESS_REFUSED_PER_SECOND/);
  });

  it("bounds every request of an account, allowed ones too (SANDBOX_EGRESS_CONNECTS_PER_SECOND)", async () => {
    const a = await start('connects', { connects: burstOnly(3) });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await ask(a, '127.0.0.1', port));
    expect(answers.map((x) => x.ok === true)).toEqual([true, true, true, false, false]);
    expect(answers[3].message).toMatch(/too many connections \(SANDBOX_EGRESS_CONNECTS_PER_SECOND\)/);
  });

  it("bounds an account's lookups by name in progress at once (SANDBOX_EGRESS_LOOKUPS_AT_ONCE); another account's go on", async () => {
    // A DNS server that answers only when told: the lookups stay in progress.
    const waiting: (() => void)[] = [];
    const slow = (): Promise<LookupAddress[]> => new Promise((r) => waiting.push(() => r([{ address: '127.0.0.1', family: 4 }])));
    const lookups = new AccountSlots(2);
    const a = await start('lookups-a', { lookups }, slow);
    const b = await start('lookups-b', { lookups }, slow);
    const held = [ask(a, 'one.example', port), ask(a, 'two.example', port)];
    await eventually(() => waiting.length === 2);
    expect(await ask(a, 'three.example', port)).toMatchObject({ ok: false, code: 'EAI_AGAIN', message: 'getaddrinfo EAI_AGAIN three.example: the sandbox has 2 lookups by name in progress, the most it may (SANDBOX_EGRESS_LOOKUPS_AT_ONCE)' });
    // By address no lookup is made; and the other account looks names up.
    expect(await ask(a, '127.0.0.1', port)).toMatchObject({ ok: true });
    const other = ask(b, 'four.example', port);
    await eventually(() => waiting.length === 3);
    for (const answer of waiting.splice(0)) answer();
    expect(await Promise.all([...held, other])).toEqual(new Array(3).fill(expect.objectContaining({ ok: true })));
    // Answered, they free their slots.
    const next = ask(a, 'five.example', port);
    await eventually(() => waiting.length === 1);
    waiting.splice(0)[0]();
    expect(await next).toMatchObject({ ok: true });
  });
});
