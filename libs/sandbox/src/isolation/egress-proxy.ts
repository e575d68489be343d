import { randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { RateBudget } from '@app/contracts';
import { resolveHost, type AccountSlots } from '@app/net';
import type { SandboxLogger } from '../types';
import type { EgressJudge } from './egress-rules';

const MAX_REQUEST_BYTES = 1024;
const CONNECT_TIMEOUT_MS = 15_000;
/** A tunnel whose sandbox side does not connect within this time is dropped. */
const UNCLAIMED_MS = 10_000;

/**
 * What an account's egress proxies may do for it, kept by the app across the account's sandbox restarts (a restarted
 * sandbox owes what it owed); each keyed by the account.
 */
export interface EgressBudgets {
  /** Bytes moved per second, both ways and all its connections together (SANDBOX_EGRESS_BYTES_PER_SECOND). */
  bytes?: RateBudget;
  /** Lines its refused connections may write to the app's log (one token a line). */
  logLines?: RateBudget;
  /** Connections it may ask for, refused or not (SANDBOX_EGRESS_CONNECTS_PER_SECOND). */
  connects?: RateBudget;
  /** Connections it may ask for that the proxy refuses itself: by the address policy, an unknown name, a malformed request (SANDBOX_EGRESS_REFUSED_PER_SECOND). */
  refused?: RateBudget;
  /** Lookups by name it may have in progress at once (SANDBOX_EGRESS_LOOKUPS_AT_ONCE). */
  lookups?: AccountSlots;
}

export interface EgressProxyOptions {
  dir: string;
  judge: EgressJudge;
  logger?: SandboxLogger;
  account?: string;
  /** Where `dir` appears inside the sandbox (answers name paths as the sandbox sees them). */
  insideDir?: string;
  /** Connections the account may have open (or asked for) at once: its sandbox cannot make the app run out of descriptors. */
  maxConnections?: number;
  budgets?: EgressBudgets;
  /** How names are looked up (resolveHost of libs/net; the specs give their own). */
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

interface TunnelRequest {
  host: string;
  port: number;
}

/**
 * The only way out of one account's sandbox: a Unix socket (`ctl.sock` in the
 * account's egress directory, bound into its sandbox) where the sandbox asks
 * for a TCP connection to `host:port`. The proxy resolves the name itself,
 * applies the address policy to every address, connects, and answers with the
 * path of a one-shot socket that carries the connection. The sandbox has no
 * network of its own (its own namespace, loopback only), so code that removes
 * the in-sandbox client still cannot connect anywhere.
 */
export class EgressProxy {
  private server: Server | undefined;
  private readonly tunnels = new Set<Server>();
  /** Upstream connections open or being opened (each holds descriptors of the app until it closes, claimed or not). */
  private upstreams = 0;
  /**
   * The open ones, destroyed when the proxy closes: ended on the sandbox's side, a connection stayed open until the
   * server closed its own side, which a tenant's server never does, and each restarted sandbox had a new count.
   */
  private readonly connections = new Set<Socket>();
  private closed = false;

  private readonly dir: string;
  private readonly judge: EgressJudge;
  private readonly logger: SandboxLogger | undefined;
  private readonly account: string;
  private readonly insideDir: string;
  private readonly maxConnections: number;
  private readonly budgets: EgressBudgets;
  private readonly resolve: (host: string) => Promise<LookupAddress[]>;

  constructor(opts: EgressProxyOptions) {
    this.dir = opts.dir;
    this.judge = opts.judge;
    this.logger = opts.logger;
    this.account = opts.account ?? '';
    this.insideDir = opts.insideDir ?? opts.dir;
    this.maxConnections = opts.maxConnections ?? Number.MAX_SAFE_INTEGER;
    this.budgets = opts.budgets ?? {};
    this.resolve = opts.resolve ?? ((host) => resolveHost(host, { account: this.account }));
  }

  /** Refused connections of this sandbox not logged since the last line (past `logLines`). */
  private unlogged = 0;

  get socketPath(): string {
    return join(this.dir, 'ctl.sock');
  }

  /** The control socket as the sandbox sees it. */
  get insidePath(): string {
    return join(this.insideDir, 'ctl.sock');
  }

  async start(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    const server = createServer((s) => this.handle(s));
    // Control connections that never send a request count too (each is a descriptor of the app until its timeout).
    server.maxConnections = this.maxConnections;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => resolve());
    });
    chmodSync(this.socketPath, 0o666);
    this.server = server;
  }

  /** Stops serving the sandbox (it stopped): every connection it asked for closes with it. */
  close(): void {
    this.closed = true;
    this.server?.close();
    for (const t of this.tunnels) t.close();
    this.tunnels.clear();
    for (const c of this.connections) c.destroy();
  }

  private handle(ctl: Socket): void {
    ctl.on('error', () => undefined);
    // Past its budget of attempts a request is answered before it is read: no name looked up, no address judged.
    const waitMs = this.overBudgetMs();
    if (waitMs > 0) return this.refuseFlood(ctl, waitMs);
    this.budgets.connects?.take(this.account, 1);
    let buf = '';
    ctl.setTimeout(CONNECT_TIMEOUT_MS, () => ctl.destroy());
    const onData = (d: Buffer) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0 && buf.length < MAX_REQUEST_BYTES) return;
      ctl.off('data', onData);
      let req: TunnelRequest | undefined;
      try {
        const parsed = JSON.parse(buf.slice(0, nl)) as TunnelRequest;
        if (typeof parsed.host === 'string' && parsed.host.length < 256 && Number.isInteger(parsed.port) && parsed.port > 0 && parsed.port < 65536) req = parsed;
      } catch {
        req = undefined;
      }
      if (!req) {
        this.budgets.refused?.take(this.account, 1);
        return this.answer(ctl, { ok: false, code: 'EINVAL', message: 'malformed egress request' });
      }
      this.open(req).then(
        (path) => this.answer(ctl, { ok: true, path }),
        (e: NodeJS.ErrnoException & { proxyRefused?: boolean }) => {
          if (e.proxyRefused) this.budgets.refused?.take(this.account, 1);
          this.answer(ctl, { ok: false, code: e.code ?? 'ECONNREFUSED', message: e.message });
        },
      );
    };
    ctl.on('data', onData);
  }

  /** How long until the account may ask for a connection again (ms; 0 when it may now: one of each budget left). */
  private overBudgetMs(): number {
    const { connects, refused } = this.budgets;
    return Math.max(connects?.waitMs(this.account, 1) ?? 0, refused?.waitMs(this.account, 1) ?? 0);
  }

  /**
   * A sandbox looping over refused connections asked for 6,000 a second, each looked up, judged and answered on the
   * app's thread. Past its budgets its requests are answered at once, and the in-sandbox client fails the next ones
   * itself until `retryMs` has passed (code that bypasses it costs the app an accept and a write each).
   */
  private refuseFlood(ctl: Socket, waitMs: number): void {
    const refused = this.budgets.refused?.waitMs(this.account, 1) ? 'refused connections (SANDBOX_EGRESS_REFUSED_PER_SECOND)' : 'connections (SANDBOX_EGRESS_CONNECTS_PER_SECOND)';
    const message = `the sandbox asked for too many ${refused}; its next ones are refused for ${waitMs} ms`;
    this.logRefusal('warn', { retryMs: waitMs }, 'sandbox connection refused: too many attempts');
    this.answer(ctl, { ok: false, code: 'ECONNREFUSED', message, retryMs: waitMs });
  }

  private answer(ctl: Socket, body: object): void {
    if (!ctl.destroyed) ctl.end(`${JSON.stringify(body)}\n`);
  }

  private async open(req: TunnelRequest): Promise<string> {
    const host = req.host.replace(/^\[|\]$/g, '');
    const addresses = isIP(host) ? [host] : await this.lookup(host);
    if (!addresses.length) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', proxyRefused: true });
    let refusal = '';
    const allowed = addresses.filter((ip) => {
      const why = this.judge.refuse(ip, req.port);
      if (why) refusal = why;
      return !why;
    });
    if (!allowed.length) {
      this.logRefusal('info', { host, port: req.port, reason: refusal }, 'sandbox connection refused');
      throw Object.assign(new Error(`connect ECONNREFUSED ${host}:${req.port}: ${refusal}`), { code: 'ECONNREFUSED', proxyRefused: true });
    }
    if (this.upstreams >= this.maxConnections) {
      this.logRefusal('warn', { host, port: req.port, max: this.maxConnections }, 'sandbox connection refused: too many open');
      throw Object.assign(new Error(`connect ECONNREFUSED ${host}:${req.port}: the sandbox has ${this.maxConnections} connections open, the most it may (SANDBOX_EGRESS_MAX_CONNECTIONS)`), { code: 'ECONNREFUSED', proxyRefused: true });
    }
    this.upstreams++;
    let upstream: Socket;
    try {
      upstream = await this.connectAny(allowed, req.port);
    } catch (e) {
      this.upstreams--;
      throw e;
    }
    this.connections.add(upstream);
    upstream.once('close', () => {
      this.upstreams--;
      this.connections.delete(upstream);
    });
    if (this.closed) {
      upstream.destroy();
      throw Object.assign(new Error(`connect ECONNREFUSED ${host}:${req.port}: the sandbox stopped`), { code: 'ECONNREFUSED' });
    }
    return this.tunnel(upstream);
  }

  /**
   * The addresses of a name, within the account's lookups at once: each waits for a DNS server's answer (two queries,
   * A and AAAA, up to 2.5 s each, tried twice), and a source looking up names whose server never answers could keep
   * the app's resolver busy for everyone. Past its bound the lookup fails at once (EAI_AGAIN, naming the setting).
   */
  private async lookup(host: string): Promise<string[]> {
    const slots = this.budgets.lookups;
    if (slots && !slots.take(this.account)) {
      const message = `getaddrinfo EAI_AGAIN ${host}: the sandbox has ${slots.max} lookups by name in progress, the most it may (SANDBOX_EGRESS_LOOKUPS_AT_ONCE)`;
      throw Object.assign(new Error(message), { code: 'EAI_AGAIN', proxyRefused: true });
    }
    try {
      return (await this.resolve(host).catch(() => [])).map((a) => a.address);
    } finally {
      slots?.release(this.account);
    }
  }

  /**
   * A refused connection costs the sandbox a few microseconds, and a loop of them wrote 6,000 lines a second to the app's
   * log: past the account's budget of lines they are counted, and the next line logged says how many were not.
   */
  private logRefusal(level: 'info' | 'warn', fields: object, msg: string): void {
    const lines = this.budgets.logLines;
    if (lines && lines.owedMs(this.account) > 0) {
      this.unlogged++;
      return;
    }
    lines?.take(this.account, 1);
    this.logger?.[level]({ account: this.account, ...fields, ...(this.unlogged ? { unlogged: this.unlogged } : {}) }, msg);
    this.unlogged = 0;
  }

  private async connectAny(ips: string[], port: number): Promise<Socket> {
    let last: Error | undefined;
    for (const ip of ips) {
      try {
        return await new Promise<Socket>((resolve, reject) => {
          const s = connect({ host: ip, port });
          s.setTimeout(CONNECT_TIMEOUT_MS, () => s.destroy(Object.assign(new Error(`connect ETIMEDOUT ${ip}:${port}`), { code: 'ETIMEDOUT' })));
          s.once('connect', () => {
            s.setTimeout(0);
            resolve(s);
          });
          s.once('error', reject);
        });
      } catch (e) {
        last = e as Error;
      }
    }
    throw last ?? new Error('no address');
  }

  /**
   * `from.pipe(to)`, within the account's byte budget: past it, `from` is not read until the budget has refilled.
   * Every byte is copied on this app's thread, and one source reading a fast server through it at 355 MB/s kept the
   * runner's thread busy: another account's source answered a tenth as many requests meanwhile.
   */
  private relay(from: Socket, to: Socket): void {
    const budget = this.budgets.bytes;
    if (!budget) {
      from.pipe(to);
      return;
    }
    from.on('data', (chunk: Buffer) => {
      const flowing = to.write(chunk);
      const waitMs = budget.take(this.account, chunk.length);
      if (flowing && waitMs === 0) return;
      from.pause();
      let pending = (flowing ? 0 : 1) + (waitMs > 0 ? 1 : 0);
      const resume = () => {
        if (--pending === 0 && !from.destroyed) from.resume();
      };
      if (!flowing) to.once('drain', resume);
      if (waitMs > 0) setTimeout(resume, waitMs).unref();
    });
    from.once('end', () => to.end());
  }

  /** A one-shot Unix socket for the sandbox side of one connection. */
  private async tunnel(upstream: Socket): Promise<string> {
    const name = `t-${randomBytes(12).toString('hex')}.sock`;
    const path = join(this.dir, name);
    const server = createServer();
    this.tunnels.add(server);
    const done = () => {
      clearTimeout(timer);
      server.close();
      this.tunnels.delete(server);
      rmSync(path, { force: true });
    };
    const timer = setTimeout(() => {
      done();
      upstream.destroy();
    }, UNCLAIMED_MS);
    timer.unref();
    server.once('connection', (inner) => {
      done();
      this.connections.add(inner);
      inner.once('close', () => this.connections.delete(inner));
      inner.on('error', () => upstream.destroy());
      upstream.on('error', () => inner.destroy());
      this.relay(inner, upstream);
      this.relay(upstream, inner);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
    chmodSync(path, 0o666);
    return join(this.insideDir, name);
  }
}
