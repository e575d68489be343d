import net = require('node:net');
import tls = require('node:tls');

type Normalized = [net.NetConnectOpts & { host?: string; port?: number; path?: string }, ((...a: unknown[]) => void) | null];
const normalizeArgs = (net as unknown as { _normalizeArgs(args: unknown[]): Normalized })._normalizeArgs;

interface ProxyAnswer {
  ok?: boolean;
  path?: string;
  code?: string;
  message?: string;
  /** Set when the account asked for too many connections: its next ones are refused here for this long. */
  retryMs?: number;
}

/** Until when (performance.now()) this worker's connections fail without asking the proxy, and why. */
let refusedUntil = 0;
let refusedWhy = '';

const refusal = (host: string, port: number, why: string): Error => Object.assign(new Error(`connect ECONNREFUSED ${host}:${port}: ${why}`), { code: 'ECONNREFUSED', address: host, port });

/** Asks the egress proxy for a connection to host:port; resolves with the Unix socket that carries it. */
function requestTunnel(connectRaw: typeof net.Socket.prototype.connect, control: string, host: string, port: number): Promise<string> {
  const now = performance.now();
  if (now < refusedUntil) return Promise.reject(refusal(host, port, `${refusedWhy} (${Math.ceil(refusedUntil - now)} ms left)`));
  return new Promise((resolve, reject) => {
    const ctl = (connectRaw as (o: net.IpcSocketConnectOpts) => net.Socket).call(new net.Socket(), { path: control });
    let buf = '';
    let failed: Error | undefined;
    ctl.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
    });
    // The proxy may answer and close before it reads the request (too many of them): its answer wins over a write error.
    ctl.on('error', (e) => {
      failed = e;
    });
    ctl.on('close', () => {
      let r: ProxyAnswer = {};
      try {
        r = JSON.parse(buf.split('\n')[0] || '{}') as ProxyAnswer;
      } catch {
        r = {};
      }
      if (r.ok && r.path) return resolve(r.path);
      if (typeof r.retryMs === 'number' && r.message) {
        refusedUntil = performance.now() + Math.min(r.retryMs, 60_000);
        refusedWhy = r.message;
        return reject(refusal(host, port, r.message));
      }
      if (!r.message && failed) return reject(refusal(host, port, `the sandbox's egress is unavailable (${failed.message})`));
      reject(Object.assign(new Error(r.message ?? `connect ECONNREFUSED ${host}:${port}`), { code: r.code ?? 'ECONNREFUSED', address: host, port }));
    });
    ctl.write(`${JSON.stringify({ host, port })}\n`);
  });
}

/**
 * Routes every outbound TCP connection of this worker (net, tls, http, https,
 * fetch, database drivers) through the sandbox's egress proxy. The sandbox has
 * no network of its own: this is how allowed connections get out, not what
 * forbids the others.
 */
export function routeTcpThroughEgress(control: string): void {
  const connectRaw = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function connect(this: net.Socket, ...args: unknown[]): net.Socket {
    const normalized: Normalized = Array.isArray(args[0]) ? (args[0] as unknown as Normalized) : normalizeArgs(args);
    const [options, cb] = normalized;
    if (options.path) return connectRaw.apply(this, args as never);
    const host = options.host || 'localhost';
    const port = Number(options.port);
    if (cb) this.once('connect', cb);
    (this as unknown as { connecting: boolean }).connecting = true;
    requestTunnel(connectRaw, control, host, port).then(
      (path) => {
        if (!this.destroyed) (connectRaw as (o: net.IpcSocketConnectOpts) => net.Socket).call(this, { path });
      },
      (e: Error) => {
        (this as unknown as { connecting: boolean }).connecting = false;
        this.destroy(e);
      },
    );
    return this;
  } as typeof net.Socket.prototype.connect;

  const tlsConnect = tls.connect;
  (tls as { connect: typeof tls.connect }).connect = function connect(...args: unknown[]): tls.TLSSocket {
    const [base, cb] = normalizeArgs(args);
    const options = { ...base } as tls.ConnectionOptions;
    if (args[1] !== null && typeof args[1] === 'object') Object.assign(options, args[1]);
    else if (args[2] !== null && typeof args[2] === 'object') Object.assign(options, args[2]);
    if (!options.socket && !options.path) {
      const host = options.host || 'localhost';
      options.socket = net.connect({ host, port: Number(options.port) });
      if (options.servername === undefined && !net.isIP(host)) options.servername = host;
    }
    return cb ? tlsConnect(options, cb as () => void) : tlsConnect(options);
  } as typeof tls.connect;
}
