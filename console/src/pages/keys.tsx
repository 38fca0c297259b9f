/** Personal API keys: list, create with scopes (the value is shown once), revoke. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';

interface Key { id: string; label: string; mask_value: string; scopes: string[]; created_at: string; last_used_at: string | null }

const SCOPES = ['feature_flag', 'experiment', 'cohort', 'event_definition', 'activity_log', 'dashboard', 'insight', 'query', 'project', 'user'];

/** The personal API keys page. */
export function Keys() {
  const list = useLoad(() => api<Key[]>('GET', '/api/personal_api_keys/'), []);
  const [label, setLabel] = useState('');
  const [scopes, setScopes] = useState<Record<string, string>>({ feature_flag: 'read' });
  const [created, setCreated] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const k = await api<{ value: string }>('POST', '/api/personal_api_keys/', { label, scopes: Object.entries(scopes).filter(([, a]) => a !== '').map(([o, a]) => `${o}:${a}`) });
      setCreated(k.value); setLabel('');
      list.reload();
    } catch (err) { setError((err as Error).message); }
  };
  const revoke = async (k: Key) => {
    if (!confirm(`Revoke ${k.label}? Every node stops accepting it.`)) return;
    try { await api('DELETE', `/api/personal_api_keys/${k.id}/`); list.reload(); } catch (err) { setError((err as Error).message); }
  };
  return (
    <section>
      <h1>Personal API keys</h1>
      {list.error && <p role="alert" class="error">{list.error}</p>}
      <table class="list">
        <thead><tr><th scope="col">Label</th><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>{list.data?.map((k) => (
          <tr><td>{k.label}</td><td><code>{k.mask_value}</code></td><td>{k.scopes.join(', ')}</td><td>{k.last_used_at ? new Date(k.last_used_at).toLocaleString() : 'never'}</td>
            <td><button class="link danger" onClick={() => revoke(k)}>Revoke</button></td></tr>
        ))}</tbody>
      </table>
      <h2>New key</h2>
      <form onSubmit={create} class="stack">
        <label>Label <input value={label} maxLength={40} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} required /></label>
        <fieldset class="scopes"><legend>Scopes</legend>
          {SCOPES.map((o) => (
            <label>{o} <select value={scopes[o] ?? ''} onChange={(e) => setScopes({ ...scopes, [o]: (e.target as HTMLSelectElement).value })}>
              <option value="">none</option><option value="read">read</option><option value="write">write</option>
            </select></label>
          ))}
        </fieldset>
        <div class="row"><button type="submit">Create key</button>{error && <span role="alert" class="error">{error}</span>}</div>
      </form>
      {created && <p role="status" class="notice">New key (shown once): <code class="secret">{created}</code></p>}
    </section>
  );
}
