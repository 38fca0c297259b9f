/** Sign-in: a personal API key (`phx_…`), kept in this tab's session only. */
import { useState } from 'preact/hooks';
import { signIn } from '../api.js';

/** The sign-in form; calls `onDone` once the key is kept. */
export function SignIn({ onDone }: { onDone(): void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try { await signIn(key.trim()); onDone(); } catch (err) { setError((err as Error).message); }
  };
  return (
    <main class="signin">
      <h1>Switchyard</h1>
      <form onSubmit={submit}>
        <label for="key">Personal API key</label>
        <input id="key" type="password" autocomplete="off" placeholder="phx_…" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required />
        <button type="submit">Sign in</button>
        {error && <p role="alert" class="error">{error}</p>}
        <p class="hint">The key stays in this browser tab's session and is sent only to this server.</p>
      </form>
    </main>
  );
}
