import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { session } from '../session';
import type { Me } from '../types';

/** Sign in with an API key: checked against GET /v1/users/me, then kept for this browser session. */
export function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" class="signin">
      <h1>Event sources</h1>
      <form
        class="card"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          try {
            const me = await api.me(key.trim());
            session.signIn(key.trim());
            onSignedIn(me);
          } catch (err) {
            setError(err instanceof ApiError && err.status === 401 ? 'That API key is not valid.' : (err as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h2>Sign in</h2>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="current-password" required value={key} onInput={(e) => setKey(e.currentTarget.value)} aria-describedby="api-key-help" aria-invalid={error ? true : undefined} />
        <p id="api-key-help" class="hint">
          <code>npm start</code> prints the demo account's key; an operator creates others with <code>npm run admin -- users create</code>. The key is kept only for this browser tab's session.
        </p>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy || !key.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}
