import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clipped } from '@app/contracts';

/** Where the dashboard is served: its own prefix, beside `/v1`, `/sse` and `/e`. */
export const WEB_UI_PREFIX = '/ui';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * The page may talk to its own origin only (the public API and its SSE streams), load nothing from
 * elsewhere, and not be framed. Inline scripts and style attributes are refused too.
 */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** `dist/web` of the installation this module runs from (the folder holding package.json). */
export function defaultWebRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist', 'web');
}

/**
 * Serves the dashboard's built files (apps/web, built into dist/web by `npm run build`) under `/ui/`,
 * with `index.html` for every other path below it (client-side routes), and redirects `/` there.
 * These are files, not API routes: they are not in the OpenAPI document and take no API key; the
 * page itself calls the public `/v1` API with the key the user signs in with.
 */
export function registerWebUi(fastify: FastifyInstance, root = defaultWebRoot()): void {
  const base = resolve(root);
  const notFound = (reply: FastifyReply, message: string): FastifyReply => reply.code(404).send({ error: message, code: 'not_found' });

  const send = (reply: FastifyReply, file: string, immutable: boolean): FastifyReply =>
    reply
      .code(200)
      .header('content-type', TYPES[extname(file)] ?? 'application/octet-stream')
      .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('x-content-type-options', 'nosniff')
      // frame-ancestors says the same to current browsers; this header to older ones.
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('content-security-policy', CSP)
      .send(readFileSync(file));

  const serve = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const index = join(base, 'index.html');
    if (!existsSync(index)) return notFound(reply, 'the dashboard is not built: run `npm run build`');
    const rest = (req.params as Record<string, string>)['*'] ?? '';
    const file = resolve(base, rest);
    if (rest && (file === base || file.startsWith(base + sep)) && existsSync(file) && statSync(file).isFile()) return send(reply, file, rest.startsWith('assets/'));
    // A missing asset is an error; any other path is a page of the single-page app.
    if (rest.startsWith('assets/') || extname(rest)) return notFound(reply, `no such file: ${clipped(`${WEB_UI_PREFIX}/${rest}`)}`);
    return send(reply, index, false);
  };

  fastify.get('/', (_req, reply) => reply.redirect(`${WEB_UI_PREFIX}/`, 302));
  // The router ignores trailing slashes: `/ui` and `/ui/` both arrive here; only `/ui` is redirected.
  fastify.get(WEB_UI_PREFIX, (req, reply) => (req.url.split('?')[0] === WEB_UI_PREFIX ? reply.redirect(`${WEB_UI_PREFIX}/`, 301) : serve(req, reply)));
  fastify.get(`${WEB_UI_PREFIX}/*`, serve);
}

/** True for the dashboard's own routes, which have no API contract (apps/api/src/contract/route-coverage.ts). */
export function isWebUiRoute(url: string): boolean {
  return url === '/' || url === WEB_UI_PREFIX || url.startsWith(`${WEB_UI_PREFIX}/`);
}
