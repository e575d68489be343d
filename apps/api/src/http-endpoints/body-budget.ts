import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { endWithJsonAnswer } from '../common/raw-json-answers';
import { clientNetwork } from '../common/client-network';
import { requestUrlRewrite } from './endpoint-urls';

/**
 * Bytes of endpoint request bodies (`/e/…`, `<endpoint_key>.<ENDPOINT_DOMAIN>`) an api replica receives at once
 * (HTTP_BODY_BYTES_IN_FLIGHT). A body is read whole before its endpoint is looked up, so 1,000 connections of one
 * address, each holding 512 KB of a body to made-up endpoint keys, held 510 MB of the api's memory until their request
 * timeout, and a few addresses more would have taken the process down. A request reserves its `Content-Length` (a
 * chunked one HTTP_MAX_BODY_BYTES) before any of its body is read, until its answer is sent or its connection closes;
 * one that does not fit, or that would take its client address past a quarter of the budget, is answered `503` with
 * `Retry-After: 1` and its connection closed, unread.
 */
export function installBodyBudget(server: Server, opts: { maxBytes: number; maxBodyBytes: number; endpointDomain: string; trusted: (address: string) => boolean }): void {
  if (opts.maxBytes <= 0) return;
  const routed = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  const target = requestUrlRewrite(opts.endpointDomain);
  // One client address (not a proxy TRUST_PROXY names: its clients are many) takes at most a quarter of the budget.
  const share = Math.max(opts.maxBodyBytes, Math.floor(opts.maxBytes / 4));
  const byAddress = new Map<string, number>();
  let held = 0;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const bytes = reservation(req, opts.maxBodyBytes);
    if (bytes > 0 && target(req).startsWith('/e/')) {
      const remote = req.socket.remoteAddress;
      const address = remote && !opts.trusted(remote) ? clientNetwork(remote) : undefined;
      const own = address === undefined ? 0 : (byAddress.get(address) ?? 0);
      if (held + bytes > opts.maxBytes || own + bytes > share) return refuse(res, opts.maxBytes);
      held += bytes;
      if (address !== undefined) byAddress.set(address, own + bytes);
      res.once('close', () => {
        held -= bytes;
        if (address === undefined) return;
        const left = (byAddress.get(address) ?? bytes) - bytes;
        if (left > 0) byAddress.set(address, left);
        else byAddress.delete(address);
      });
    }
    for (const listener of routed) listener.call(server, req, res);
  });
}

/** What a request's body may take: its declared length (one over the limit is refused unread: none), else the limit. */
function reservation(req: IncomingMessage, maxBodyBytes: number): number {
  const length = req.headers['content-length'];
  if (length !== undefined) return /^\d+$/.test(length) && Number(length) <= maxBodyBytes ? Number(length) : 0;
  return req.headers['transfer-encoding'] !== undefined ? maxBodyBytes : 0;
}

function refuse(res: ServerResponse, maxBytes: number): void {
  const error = `this api replica is receiving as many bytes of request bodies to endpoints at once as it takes (HTTP_BODY_BYTES_IN_FLIGHT, ${maxBytes}; a quarter of it from one client address): retry later`;
  endWithJsonAnswer(res, 503, { error, code: 'unavailable', details: { retry_after_seconds: 1 } }, { 'retry-after': '1' });
}
