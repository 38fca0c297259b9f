/** Experiments by status (draft, running, stopped; filtered by the API), newest first, page by page. */
import { useState } from 'preact/hooks';
import { usePaged } from '../components/paged.js';
import { MoreRows } from '../components/more-rows.js';

interface Experiment { id: number; name: string; feature_flag_key: string; status: string; start_date: string | null; end_date: string | null; archived: boolean }

/** The experiments page: a status filter over the list. */
export function ExperimentList() {
  const [status, setStatus] = useState('');
  const list = usePaged<Experiment>(`/p/experiments/?limit=100${status ? `&status=${status}` : ''}`, [status]);
  const { error } = list;
  const shown = list.rows.filter((x) => status === '' || x.status === status);
  return (
    <section>
      <div class="bar">
        <h1>Experiments</h1>
        <a href="#/holdouts">Holdouts</a>
        <a href="#/saved-metrics">Shared metrics</a>
        <a class="button" href="#/experiments/new">New experiment</a>
      </div>
      <div class="filters" role="group" aria-label="Status">
        {['', 'draft', 'running', 'stopped'].map((s) => (
          <button class={status === s ? 'chip on' : 'chip'} aria-pressed={status === s} onClick={() => setStatus(s)}>{s === '' ? 'all' : s}</button>
        ))}
      </div>
      {error && <p role="alert" class="error">{error}</p>}
      <table class="list">
        <thead><tr><th scope="col">Name</th><th scope="col">Flag</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Ended</th></tr></thead>
        <tbody>
          {shown.map((x) => (
            <tr key={x.id}>
              <td><a href={`#/experiments/${x.id}`}>{x.name}</a></td>
              <td><code>{x.feature_flag_key}</code></td>
              <td><span class={`badge ${x.status}`}>{x.status}</span></td>
              <td>{x.start_date ? new Date(x.start_date).toLocaleDateString() : '–'}</td>
              <td>{x.end_date ? new Date(x.end_date).toLocaleDateString() : '–'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {!list.loading && shown.length === 0 && <p>No experiments.</p>}
      <MoreRows list={list} noun="experiments" />
    </section>
  );
}
