import { useEffect, useState } from 'preact/hooks';

// Client-side routes below /ui/ (the api answers index.html for each of them).
export const BASE = '/ui';

export function navigate(to: string, replace = false): void {
  const target = to.startsWith(BASE) ? to : `${BASE}${to}`;
  if (replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** The path below /ui (`/`, `/sources/dc_…`) and the query, kept in step with the address bar. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const read = () => ({ path: location.pathname.slice(BASE.length).replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () => setLoc(read());
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return loc;
}

/** Same-origin links below /ui open without a page load; modified clicks keep the browser's behaviour. */
export function interceptLinks(): void {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element).closest?.('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const href = a.getAttribute('href');
    if (!href || !href.startsWith(`${BASE}/`)) return;
    e.preventDefault();
    navigate(href);
  });
}
