/**
 * Holdouts (`/experiment_holdouts/`): a share of users kept out of every experiment that uses the
 * holdout (they get variant `holdout-<id>`). List, create, edit name, description and share in
 * place, delete (the experiments using it lose it).
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { usePaged } from '../components/paged.js';
import { MoreRows } from '../components/more-rows.js';

interface Holdout { id: number; name: string; description: string | null; filters: { rollout_percentage: number }[] }

function HoldoutForm({ initial, submit, label, onCancel }: { initial: { name: string; description: string; share: number }; submit(v: { name: string; description: string; share: number }): Promise<void>; label: string; onCancel?(): void }) {
  const [v, setV] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const go = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try { await submit(v); if (!onCancel) setV({ name: '', description: '', share: 10 }); } catch (err) { setError((err as Error).message); }
  };
  return (
    <form class="row holdout-form" onSubmit={go}>
      <label>Name <input value={v.name} onInput={(e) => setV({ ...v, name: (e.target as HTMLInputElement).value })} required /></label>
      <label class="grow">Description <input value={v.description} onInput={(e) => setV({ ...v, description: (e.target as HTMLInputElement).value })} /></label>
      <label>Users held out <input type="number" min="0" max="100" step="any" value={v.share} onInput={(e) => setV({ ...v, share: Number((e.target as HTMLInputElement).value) })} /> %</label>
      <button type="submit">{label}</button>
      {onCancel && <button type="button" class="link" onClick={onCancel}>Cancel</button>}
      {error && <span role="alert" class="error">{error}</span>}
    </form>
  );
}

const body = (v: { name: string; description: string; share: number }) => ({ name: v.name, description: v.description || null, filters: [{ properties: [], rollout_percentage: v.share }] });

/** The holdouts page. */
export function Holdouts() {
  const list = usePaged<Holdout>('/p/experiment_holdouts/?limit=100', []);
  const [editing, setEditing] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const remove = async (h: Holdout) => {
    if (!confirm(`Delete holdout ${h.name}? Experiments using it stop holding users out.`)) return;
    setError(null);
    try { await api('DELETE', `/p/experiment_holdouts/${h.id}/`); list.reload(); } catch (e) { setError((e as Error).message); }
  };
  return (
    <section>
      <div class="bar"><h1>Holdouts</h1><a href="#/experiments">Experiments</a></div>
      <p class="hint">A holdout keeps a share of users out of every experiment that uses it, so you can measure the experiments' combined effect. Pick one when creating an experiment.</p>
      {(list.error || error) && <p role="alert" class="error">{list.error ?? error}</p>}
      <table class="list">
        <thead><tr><th scope="col">Name</th><th scope="col">Description</th><th scope="col">Held out</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>{list.rows.map((h) => editing === h.id ? (
          <tr key={h.id}><td colSpan={4}>
            <HoldoutForm label="Save" initial={{ name: h.name, description: h.description ?? '', share: h.filters[0]?.rollout_percentage ?? 0 }}
              submit={async (v) => { await api('PATCH', `/p/experiment_holdouts/${h.id}/`, body(v)); setEditing(null); list.reload(); }} onCancel={() => setEditing(null)} />
          </td></tr>
        ) : (
          <tr key={h.id} data-holdout={h.name}>
            <td>{h.name}</td><td>{h.description ?? ''}</td><td>{h.filters[0]?.rollout_percentage ?? 0} %</td>
            <td><button class="link" onClick={() => setEditing(h.id)} aria-label={`Edit ${h.name}`}>Edit</button> <button class="link danger" onClick={() => remove(h)} aria-label={`Delete ${h.name}`}>Delete</button></td>
          </tr>
        ))}</tbody>
      </table>
      {!list.loading && list.rows.length === 0 && <p>No holdouts yet.</p>}
      <MoreRows list={list} noun="holdouts" />
      <h2>New holdout</h2>
      <HoldoutForm label="Create holdout" initial={{ name: '', description: '', share: 10 }}
        submit={async (v) => { await api('POST', '/p/experiment_holdouts/', body(v)); list.reload(); }} />
    </section>
  );
}
