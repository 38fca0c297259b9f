/**
 * Shared metrics (`/experiment_saved_metrics/`): ExperimentMetrics kept once and used by several
 * experiments. List, create, edit (name, description, the metric; its uuid is kept), delete.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { usePaged } from '../components/paged.js';
import { MoreRows } from '../components/more-rows.js';
import { fromMetric, metricName, toMetric, type MetricForm, type StoredMetric } from '../components/metric-form.js';

interface Saved { id: number; name: string; description: string | null; query: StoredMetric }
interface Draft { name: string; description: string; metric: MetricForm }

function SavedForm({ initial, submit, label, onCancel }: { initial: Draft; submit(d: Draft): Promise<void>; label: string; onCancel?(): void }) {
  const [d, setD] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const go = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try { await submit(d); if (!onCancel) setD({ name: '', description: '', metric: { kind: 'mean', events: '' } }); } catch (err) { setError((err as Error).message); }
  };
  const m = d.metric;
  return (
    <form class="row saved-metric-form" onSubmit={go}>
      <label>Name <input value={d.name} onInput={(e) => setD({ ...d, name: (e.target as HTMLInputElement).value })} required /></label>
      <label class="grow">Description <input value={d.description} onInput={(e) => setD({ ...d, description: (e.target as HTMLInputElement).value })} /></label>
      {m.locked ? <span class="hint">{metricName(m.original!)} (defined through the API; kept)</span> : (
        <>
          <label>Type <select value={m.kind} onChange={(e) => setD({ ...d, metric: { ...m, kind: (e.target as HTMLSelectElement).value as MetricForm['kind'] } })}>
            <option value="mean">mean (count of an event per user)</option><option value="funnel">funnel (ordered events)</option>
          </select></label>
          <label class="grow">{m.kind === 'mean' ? 'Event' : 'Steps (comma-separated events)'} <input value={m.events} required onInput={(e) => setD({ ...d, metric: { ...m, events: (e.target as HTMLInputElement).value } })} /></label>
        </>
      )}
      <button type="submit">{label}</button>
      {onCancel && <button type="button" class="link" onClick={onCancel}>Cancel</button>}
      {error && <span role="alert" class="error">{error}</span>}
    </form>
  );
}

const body = (d: Draft) => {
  const { name: _generated, ...query } = toMetric(d.metric);
  return { name: d.name, description: d.description || null, query };
};

/** The shared-metrics page. */
export function SavedMetrics() {
  const list = usePaged<Saved>('/p/experiment_saved_metrics/?limit=100', []);
  const [editing, setEditing] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const remove = async (s: Saved) => {
    if (!confirm(`Delete the shared metric ${s.name}? Experiments using it lose it.`)) return;
    setError(null);
    try { await api('DELETE', `/p/experiment_saved_metrics/${s.id}/`); list.reload(); } catch (e) { setError((e as Error).message); }
  };
  return (
    <section>
      <div class="bar"><h1>Shared metrics</h1><a href="#/experiments">Experiments</a></div>
      <p class="hint">A shared metric is defined once and added to any experiment (the API's <code>saved_metrics_ids</code>); its results show on each experiment's page.</p>
      {(list.error || error) && <p role="alert" class="error">{list.error ?? error}</p>}
      <table class="list">
        <thead><tr><th scope="col">Name</th><th scope="col">Metric</th><th scope="col">Description</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>{list.rows.map((s) => editing === s.id ? (
          <tr key={s.id}><td colSpan={4}>
            <SavedForm label="Save" initial={{ name: s.name, description: s.description ?? '', metric: fromMetric(s.query) }}
              submit={async (d) => { await api('PATCH', `/p/experiment_saved_metrics/${s.id}/`, body(d)); setEditing(null); list.reload(); }} onCancel={() => setEditing(null)} />
          </td></tr>
        ) : (
          <tr key={s.id} data-saved-metric={s.name}>
            <td>{s.name}</td><td>{s.query.metric_type}: {s.query.metric_type === 'funnel' ? (s.query.series ?? []).map((x) => x.event).join(' → ') : s.query.source?.event ?? ''}</td><td>{s.description ?? ''}</td>
            <td><button class="link" onClick={() => setEditing(s.id)} aria-label={`Edit ${s.name}`}>Edit</button> <button class="link danger" onClick={() => remove(s)} aria-label={`Delete ${s.name}`}>Delete</button></td>
          </tr>
        ))}</tbody>
      </table>
      {!list.loading && list.rows.length === 0 && <p>No shared metrics yet.</p>}
      <MoreRows list={list} noun="shared metrics" />
      <h2>New shared metric</h2>
      <SavedForm label="Create shared metric" initial={{ name: '', description: '', metric: { kind: 'mean', events: '' } }}
        submit={async (d) => { await api('POST', '/p/experiment_saved_metrics/', body(d)); list.reload(); }} />
    </section>
  );
}
