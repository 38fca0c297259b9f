/**
 * Feature flags: search, filter by state, toggle `active` in place; links to each flag. Read page
 * by page (the API's `next` links). A project without any flag gets the first-run guide instead.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { usePaged } from '../components/paged.js';
import { MoreRows } from '../components/more-rows.js';
import { FirstRun } from './first-run.js';

interface Flag { id: number; key: string; name: string; active: boolean; status: string; rollout_percentage: number | null; filters: { multivariate?: { variants: unknown[] } | null } }

/** The flags page. */
export function FlagList() {
  const [search, setSearch] = useState('');
  const [active, setActive] = useState('');
  const [busy, setBusy] = useState<number | null>(null);
  const q = new URLSearchParams({ limit: '100', ...(search ? { search } : {}), ...(active ? { active } : {}) });
  const list = usePaged<Flag>(`/p/feature_flags/?${q}`, [search, active]);
  const { error, reload } = list;
  const data = list.loading && list.rows.length === 0 ? null : { count: list.count ?? list.rows.length, results: list.rows };
  const toggle = async (f: Flag) => {
    setBusy(f.id);
    try { await api('PATCH', `/p/feature_flags/${f.id}/`, { active: !f.active }); reload(); } catch (e) { alert((e as Error).message); } finally { setBusy(null); }
  };
  if (data && data.count === 0 && search === '' && active === '') return <FirstRun />;
  return (
    <section>
      <div class="bar">
        <h1>Feature flags</h1>
        <a class="button" href="#/flags/new">New flag</a>
      </div>
      <div class="filters">
        <label>Search <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} placeholder="key or name" /></label>
        <label>State <select value={active} onChange={(e) => setActive((e.target as HTMLSelectElement).value)}>
          <option value="">all</option><option value="true">enabled</option><option value="false">disabled</option>
        </select></label>
      </div>
      {error && <p role="alert" class="error">{error}</p>}
      {data && (
        <table class="list">
          <caption class="sr-only">{data.count} flags</caption>
          <thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Release</th><th scope="col">Status</th><th scope="col">Enabled</th></tr></thead>
          <tbody>
            {data.results.map((f) => (
              <tr key={f.id}>
                <td><a href={`#/flags/${f.id}`}>{f.key}</a></td>
                <td>{f.name}</td>
                <td>{f.filters.multivariate ? `${f.filters.multivariate.variants.length} variants` : f.rollout_percentage !== null ? `${f.rollout_percentage} %` : 'conditions'}</td>
                <td><span class={`badge ${f.status.toLowerCase()}`}>{f.status.toLowerCase()}</span></td>
                <td><label class="switch"><input type="checkbox" checked={f.active} disabled={busy === f.id} onChange={() => toggle(f)} aria-label={`Enable ${f.key}`} /><span /></label></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data && data.results.length === 0 && <p>No flags match.</p>}
      <MoreRows list={list} noun="flags" />
    </section>
  );
}
