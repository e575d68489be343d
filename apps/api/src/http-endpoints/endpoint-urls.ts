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

/** Fastify's `rewriteUrl`: the origin form of the target, then (with ENDPOINT_DOMAIN) hostEndpointRewrite's. */
export function requestUrlRewrite(domain: string): (req: { url?: string; headers: Record<string, string | string[] | undefined> }) => string {
  const byHost = domain ? hostEndpointRewrite(domain) : undefined;
  return (req) => {
    const url = originForm(req.url ?? '/');
    return byHost ? byHost({ url, headers: req.headers }) : url;
  };
}

/**
 * Fastify's `rewriteUrl`: a request to `<endpoint_key>.<ENDPOINT_DOMAIN>` (any
 * path) is routed as `/e/<endpoint_key><path>`; every other request is left alone.
 */
export function hostEndpointRewrite(domain: string): (req: { url?: string; headers: Record<string, string | string[] | undefined> }) => string {
  const suffix = `.${domain.toLowerCase()}`;
  return (req) => {
    const url = req.url ?? '/';
    const host = String(req.headers['x-forwarded-host'] ?? req.headers.host ?? '').split(',')[0].trim().toLowerCase().replace(/:\d+$/, '');
    if (!host.endsWith(suffix)) return url;
    const key = host.slice(0, -suffix.length);
    if (!KEY_LABEL.test(key)) return url;
    return `/e/${key}${url === '/' ? '' : url.startsWith('/?') ? url.slice(1) : url}`;
  };
}
