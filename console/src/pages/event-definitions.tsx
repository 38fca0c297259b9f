/** Event definitions: every event name the nodes have captured, with volume and last seen. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';

interface Definition { id: string; name: string; volume_30_day: number | null; last_seen_at: string | null; description?: string | null }

/** The event definitions page. */
export function EventDefinitions() {
  const [search, setSearch] = useState('');
  const list = useLoad(() => api<{ count: number; results: Definition[] }>('GET', `/p/event_definitions/?limit=200${search ? `&search=${encodeURIComponent(search)}` : ''}`), [search]);
  return (
    <section>
      <h1>Event definitions</h1>
      <div class="filters"><label>Search <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} /></label></div>
      {list.error && <p role="alert" class="error">{list.error}</p>}
      <table class="list">
        <thead><tr><th scope="col">Event</th><th scope="col">Last seen</th><th scope="col">Description</th></tr></thead>
        <tbody>{list.data?.results.map((d) => <tr><td><code>{d.name}</code></td><td>{d.last_seen_at ? new Date(d.last_seen_at).toLocaleString() : '–'}</td><td>{d.description ?? ''}</td></tr>)}</tbody>
      </table>
    </section>
  );
}
