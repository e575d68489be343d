/**
 * A component's `Set-Cookie` stays with its own endpoint. Without `ENDPOINT_DOMAIN`, every endpoint shares
 * the origin of the API and the dashboard: a cookie with `Path=/` (or a `Domain` of a parent domain) would
 * ride along with the dashboard's and the API's requests, and a tenant could set enough large ones that the
 * browser's requests to them fail (431). So each cookie becomes host-only (`Domain` dropped) and, on the
 * shared origin, its `Path` becomes `/e/<endpoint_key>`; on an endpoint's own host (`<key>.<ENDPOINT_DOMAIN>`)
 * the host already separates it and the component's `Path` is kept.
 */
export function scopeSetCookie(value: string, endpointPath: string | undefined): string {
  const [pair, ...attributes] = value.split(';');
  const kept = attributes.map((a) => a.trim()).filter((a) => {
    const name = a.split('=')[0].trim().toLowerCase();
    return a !== '' && name !== 'domain' && (endpointPath === undefined || name !== 'path');
  });
  if (endpointPath !== undefined) kept.push(`Path=${endpointPath}`);
  return [pair.trim(), ...kept].join('; ');
}

/** `Set-Cookie` as a component gave it (one value or several), each scoped with `scopeSetCookie`. */
export function scopeSetCookies(value: unknown, endpointPath: string | undefined): string[] {
  return [value].flat().map((v) => scopeSetCookie(String(v), endpointPath));
}
