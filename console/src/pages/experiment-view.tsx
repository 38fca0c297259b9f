/**
 * One experiment: launch, stop and conclude it; its description, dates and days running; its
 * metrics, editable after creation; per metric, the results (metric-result.tsx); and the users
 * exposed per day by variant (`ExperimentExposureQuery`, exposure-chart.tsx).
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';
import { MetricResult } from '../components/metric-result.js';
import { ExposureChart, type ExposureSeries } from '../components/exposure-chart.js';
import { ExperimentEdit } from '../components/experiment-edit.js';
import type { StoredMetric } from '../components/metric-form.js';

interface Experiment {
  id: number; name: string; description: string | null; feature_flag_key: string; feature_flag: { id: number } | null; status: string;
  start_date: string | null; end_date: string | null; conclusion: string | null; metrics: StoredMetric[]; metrics_secondary: StoredMetric[];
  saved_metrics: { name: string; query: StoredMetric; metadata: { type?: string } | null }[];
  holdout: { id: number; name: string } | null; parameters: { feature_flag_variants?: { key: string; rollout_percentage?: number }[] } | null;
}

const CONCLUSIONS = ['won', 'lost', 'inconclusive', 'stopped_early', 'invalid'];
const DAY = 86_400_000;

/** Whole days from `start` to `end` (or now). */
export function daysRunning(start: string, end: string | null): number {
  return Math.max(0, Math.floor(((end ? Date.parse(end) : Date.now()) - Date.parse(start)) / DAY));
}

function when(d: string | null): string { return d ? new Date(d).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '–'; }

function Exposures({ experiment }: { experiment: Experiment }) {
  const q = useLoad(() => api<{ timeseries: ExposureSeries[]; total_exposures: Record<string, number> }>('POST', '/p/query/', { query: { kind: 'ExperimentExposureQuery', experiment_id: experiment.id } }), [experiment.id, experiment.end_date]);
  return (
    <>
      <h2>Exposures</h2>
      {q.error && <p class="error" role="alert">{q.error}</p>}
      {!q.data && !q.error && <p class="hint">Computing…</p>}
      {q.data && <div class="tile"><h3>Exposed users per day</h3><ExposureChart series={q.data.timeseries} totals={q.data.total_exposures} /></div>}
    </>
  );
}

/** One experiment's page. */
export function ExperimentView({ id }: { id: number }) {
  const x = useLoad(() => api<Experiment>('GET', `/p/experiments/${id}/`), [id]);
  const [error, setError] = useState<string | null>(null);
  const [conclusion, setConclusion] = useState('won');
  const [editing, setEditing] = useState(false);
  const patch = async (body: object) => {
    setError(null);
    try { await api('PATCH', `/p/experiments/${id}/`, body); x.reload(); } catch (e) { setError((e as Error).message); }
  };
  const e = x.data;
  if (x.error) return <p role="alert" class="error">{x.error}</p>;
  if (!e) return <p>Loading…</p>;
  const variants = e.parameters?.feature_flag_variants ?? [];
  const shared = (type: string) => e.saved_metrics.filter((s) => (s.metadata?.type ?? 'primary') === type).map((s) => ({ ...s.query, name: s.query.name ?? s.name }));
  const primary = [...e.metrics, ...shared('primary')];
  const secondary = [...e.metrics_secondary, ...shared('secondary')];
  return (
    <section>
      <div class="bar">
        <h1>{e.name}</h1>
        <span class={`badge ${e.status}`}>{e.status}</span>
        {e.status === 'draft' && <button onClick={() => patch({ start_date: new Date().toISOString() })}>Launch</button>}
        {e.status === 'running' && <button onClick={() => patch({ end_date: new Date().toISOString() })}>Stop</button>}
        {e.status === 'stopped' && !e.conclusion && (
          <span class="row">
            <label>Conclusion <select value={conclusion} onChange={(ev) => setConclusion((ev.target as HTMLSelectElement).value)}>{CONCLUSIONS.map((c) => <option value={c}>{c}</option>)}</select></label>
            <button onClick={() => patch({ conclusion })}>Conclude</button>
          </span>
        )}
        {e.conclusion && <span class="badge">concluded: {e.conclusion}</span>}
      </div>
      {error && <p role="alert" class="error">{error}</p>}
      {e.description && <p class="description">{e.description}</p>}
      <dl class="facts">
        <div><dt>Flag</dt><dd><a href={e.feature_flag ? `#/flags/${e.feature_flag.id}` : '#/flags'}><code>{e.feature_flag_key}</code></a></dd></div>
        <div><dt>Variants</dt><dd>{variants.map((v) => `${v.key}${v.rollout_percentage !== undefined ? ` ${v.rollout_percentage} %` : ''}`).join(', ')}</dd></div>
        <div><dt>Start date</dt><dd>{when(e.start_date)}</dd></div>
        <div><dt>End date</dt><dd>{e.end_date ? when(e.end_date) : e.start_date ? 'still running' : '–'}</dd></div>
        <div><dt>Days running</dt><dd data-days>{e.start_date ? daysRunning(e.start_date, e.end_date) : '–'}</dd></div>
        {e.holdout && <div><dt>Holdout</dt><dd><a href="#/holdouts">{e.holdout.name}</a></dd></div>}
      </dl>
      {editing ? (
        <ExperimentEdit id={e.id} description={e.description} metrics={e.metrics} secondary={e.metrics_secondary}
          onSaved={() => { setEditing(false); x.reload(); }} onCancel={() => setEditing(false)} />
      ) : <button class="chip" onClick={() => setEditing(true)}>Edit description and metrics</button>}
      {e.start_date === null ? (
        <>
          <h2>Metrics</h2>
          {primary.length + secondary.length === 0 ? <p class="hint">No metrics yet: add one with “Edit description and metrics”.</p>
            : <ul>{[...primary, ...secondary].map((m) => <li>{m.name ?? m.metric_type}</li>)}</ul>}
          <p class="hint">Launch the experiment to collect exposures and results.</p>
        </>
      ) : (
        <>
          <h2>Results</h2>
          {primary.length === 0 && <p class="hint">No primary metric: add one with “Edit description and metrics”.</p>}
          <div class="results-grid">{primary.map((m) => <MetricResult key={`${m.uuid}-${m.fingerprint}`} experimentId={e.id} metric={m} />)}</div>
          {secondary.length > 0 && (
            <>
              <h2>Secondary metrics</h2>
              <div class="results-grid">{secondary.map((m) => <MetricResult key={`${m.uuid}-${m.fingerprint}`} experimentId={e.id} metric={m} />)}</div>
            </>
          )}
          <Exposures experiment={e} />
        </>
      )}
    </section>
  );
}
