// The API key and the chosen org live in sessionStorage: they last for this browser tab's
// session and signing out forgets them. Nothing is kept in localStorage or cookies.
const KEY = 'ess.apiKey';
const ORG = 'ess.orgId';

export const session = {
  key(): string | null {
    return sessionStorage.getItem(KEY);
  },
  signIn(key: string): void {
    sessionStorage.setItem(KEY, key);
  },
  signOut(): void {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(ORG);
  },
  org(): string | null {
    return sessionStorage.getItem(ORG);
  },
  setOrg(id: string | null): void {
    if (id) sessionStorage.setItem(ORG, id);
    else sessionStorage.removeItem(ORG);
  },
  /** What the Account page shows of the key: enough to recognise it, not to use it. */
  keyHint(): string {
    const k = this.key() ?? '';
    return k.length > 10 ? `${k.slice(0, 4)}…${k.slice(-4)}` : '…';
  },
};
