import type { AppConfig } from '@app/config';

type UrlConfig = Pick<AppConfig, 'publicUrl' | 'endpointDomain'>;

/**
 * The public URL of an HTTP source: `<PUBLIC_URL>/e/<endpoint_key>`, or
 * `<scheme>://<endpoint_key>.<ENDPOINT_DOMAIN>[:<port>]` (scheme and port of
 * PUBLIC_URL) when a domain is configured. Both forms always reach the source.
 */
export function endpointUrlOf(config: UrlConfig, endpointKey: string | null | undefined): string | undefined {
  if (!endpointKey) return undefined;
  if (!config.endpointDomain) return `${config.publicUrl}/e/${endpointKey}`;
  const base = new URL(config.publicUrl);
  return `${base.protocol}//${endpointKey}.${config.endpointDomain}${base.port ? `:${base.port}` : ''}`;
}

const KEY_LABEL = /^en[a-z0-9]+$/;
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/**
 * A request target in absolute form (`http://host/e/<key>/x?y`, RFC 9112 §3.2.2, what a client sends to a forward
 * proxy) as the origin form it names (`/e/<key>/x?y`); any other target as it is.
 */
export function originForm(url: string): string {
  const origin = ABSOLUTE_FORM.exec(url);
  if (!origin) return url;
  const rest = url.slice(origin[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

const ESCAPE = /%([0-9a-f]{2})/gi;
const UNRESERVED = /^[A-Za-z0-9._~-]$/;
const ENDPOINT_PREFIX = /^\/([^/?#]*)\/([^/?#]*)/;

/** `s` with its escapes of unreserved characters (`%65` for `e`, RFC 3986 §2.3: the same character) decoded, the others kept. */
function unescapeUnreserved(s: string): string {
  return s.replace(ESCAPE, (escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : escape;
  });
}

/**
 * An endpoint target written with escapes (`/%65/<key>`, `/e/%65n…`) as `/e/<key>…`. The router decodes escapes in the
 * path, so such a target reached the endpoint while every check made on the target as written (`/e/…`: the body budget
 * of HTTP_BODY_BYTES_IN_FLIGHT, the `Path` given to a component's cookies) took it for another route. Only the first two
 * segments are rewritten; the rest of the path reaches the component as it was sent.
 */
export function canonicalEndpointTarget(url: string): string {
  if (!url.includes('%')) return url;
  const m = ENDPOINT_PREFIX.exec(url);
  if (!m || unescapeUnreserved(m[1]) !== 'e') return url;
  return `/e/${unescapeUnreserved(m[2])}${url.slice(m[0].length)}`;
}

/**
 * Fastify's `rewriteUrl`: the origin form of the target, then (with ENDPOINT_DOMAIN) hostEndpointRewrite's; a target
 * the host does not route has an endpoint's prefix read without escapes (on an endpoint's own host the whole path is the
 * component's, kept as sent).
 */
export function requestUrlRewrite(domain: string): (req: { url?: string; headers: Record<string, string | string[] | undefined> }) => string {
  const byHost = domain ? hostEndpointRewrite(domain) : undefined;
  return (req) => {
    const url = originForm(req.url ?? '/');
    const routed = byHost ? byHost({ url, headers: req.headers }) : url;
    return routed === url ? canonicalEndpointTarget(url) : routed;
  };
}

/**
 * Fastify's `rewriteUrl`: a request to `<endpoint_key>.<ENDPOINT_DOMAIN>` (any
 * path) is routed as `/e/<endpoint_key><path>`; every other request is left alone.
 */
export function hostEndpointRewrite(domain: string): (req: { url?: string; headers: Record<string, string | string[] | undefined> }) => string {
  return (req) => {
    const url = req.url ?? '/';
    const key = endpointKeyOfHost(domain, req.headers);
    if (key === undefined) return url;
    return `/e/${key}${url === '/' ? '' : url.startsWith('/?') ? url.slice(1) : url}`;
  };
}

/** The endpoint key of a request sent to `<endpoint_key>.<ENDPOINT_DOMAIN>` (routed by its host), else undefined. */
export function endpointKeyOfHost(domain: string, headers: Record<string, string | string[] | undefined>): string | undefined {
  if (!domain) return undefined;
  const suffix = `.${domain.toLowerCase()}`;
  const host = String(headers['x-forwarded-host'] ?? headers.host ?? '').split(',')[0].trim().toLowerCase().replace(/:\d+$/, '');
  if (!host.endsWith(suffix)) return undefined;
  const key = host.slice(0, -suffix.length);
  return KEY_LABEL.test(key) ? key : undefined;
}
