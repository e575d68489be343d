import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** An HTTP service of this machine's that tenants must not reach: it answers `body` to anything and records each request. */
export class InternalServer {
  /** Each request that reached it, as `<host> <url>`. */
  readonly hits: string[] = [];
  private server?: Server;

  constructor(private readonly body: string) {}

  /** Listens on a free port of `host` (`0.0.0.0`, `::` for every address of both families, `127.0.0.1`…). */
  async start(host: string): Promise<this> {
    const server = createServer((req, res) => {
      this.hits.push(`${req.headers.host} ${req.url}`);
      res.end(this.body);
    });
    this.server = server;
    await new Promise<void>((r) => server.listen(0, host, r));
    return this;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}
