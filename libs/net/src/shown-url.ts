import { SECRET_MASK } from '@app/contracts';

/**
 * A URL as it may be kept and shown: its user info (`user:token@`) and the values of its query (`?token=…`; a part
 * without `=` whole) as `********`, since either may carry a credential; the rest as written. Idempotent. A value
 * that is not an absolute URL is shown as `********` whole.
 */
export function shownUrl(raw: string | URL): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return SECRET_MASK;
  }
  if (url.username || url.password) {
    url.username = SECRET_MASK;
    url.password = '';
  }
  if (url.search.length > 1) {
    url.search = url.search
      .slice(1)
      .split('&')
      .map((part) => (part.includes('=') ? `${part.slice(0, part.indexOf('='))}=${SECRET_MASK}` : part && SECRET_MASK))
      .join('&');
  }
  return url.href;
}

/** `text` as written when it is a URL with no user info and no query, or no URL at all; else `shownUrl(text)`. */
export function shownAsWritten(text: string): string {
  try {
    const url = new URL(text);
    return url.username || url.password || url.search ? shownUrl(url) : text;
  } catch {
    return text;
  }
}

/** True when the URL has `********` where `shownUrl` hides a credential: its user info, or a value of its query. */
export function masksCredentials(url: URL): boolean {
  if (url.username === SECRET_MASK || url.password === SECRET_MASK) return true;
  return url.search
    .slice(1)
    .split('&')
    .some((part) => part === SECRET_MASK || part.slice(part.indexOf('=') + 1) === SECRET_MASK);
}

/** Query parameters taken for credentials by `credentialsMasked`: their names say so. */
const CREDENTIAL_PARAM = /token|secret|key|pass|pwd|auth|sig|credential|session/i;

/**
 * `text` as written, but its user info and the values of its query parameters named like credentials (`token`,
 * `api_key`, `secret`, `password`, `auth`, `sig`…) as `********`; other query values (`?n=1`) as written.
 */
export function credentialsMasked(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  const parts = url.search.slice(1).split('&');
  const masked = parts.map((part) => {
    const eq = part.indexOf('=');
    return eq >= 0 && CREDENTIAL_PARAM.test(safeDecode(part.slice(0, eq))) ? `${part.slice(0, eq)}=${SECRET_MASK}` : part;
  });
  const userInfo = Boolean(url.username || url.password);
  if (!userInfo && masked.every((part, i) => part === parts[i])) return text;
  if (userInfo) {
    url.username = SECRET_MASK;
    url.password = '';
  }
  if (url.search.length > 1) url.search = masked.join('&');
  return url.href;
}

function safeDecode(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}
