/**
 * One experiment: launch, stop and conclude it; per metric, the results chart (each variant's
 * interval of the effect against the baseline, chance to win or p-value, significance), a
 * sample-ratio-mismatch warning, exposures per day by variant, and the E9 cumulative timeseries.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';
import { IntervalChart } from '../components/interval-chart.js';
import { Insight, LineChart } from '../components/insight.js';

interface Metric { uuid?: string; fingerprint?: string; name?: string; metric_type: string; source?: { event?: string }; series?: { event?: string }[] }
interface Experiment { id: number; name: string; feature_flag_key: string; status: string; start_date: string | null; end_date: string | null; conclusion: string | null; metrics: Metric[]; parameters: { feature_flag_variants?: { key: string }[] } | null }
interface Arm { key: string; number_of_samples: number; sum: number; chance_to_win?: number | null; credible_interval?: [number, number] | null; p_value?: number | null; confidence_interval?: [number, number] | null; significant?: boolean; validation_failures?: string[] }
interface QueryResponse { baseline: Arm; variant_results: Arm[]; stats_method: string; sample_ratio_mismatch: { p_value: number; mismatch: boolean } | null }

const CONCLUSIONS = ['won', 'lost', 'inconclusive', 'stopped_early', 'invalid'];

function metricName(m: Metric): string {
  return m.name ?? (m.metric_type === 'funnel' ? (m.series ?? []).map((s) => s.event).join(' → ') : `${m.source?.event ?? 'event'} (${m.metric_type})`);
}

function MetricResult({ experiment, metric }: { experiment: Experiment; metric: Metric }) {
  const q = useLoad(() => api<QueryResponse>('POST', '/p/query/', { query: { kind: 'ExperimentQuery', experiment_id: experiment.id, metric } }), [experiment.id, metric.uuid]);
  const ts = useLoad(() => (metric.uuid && metric.fingerprint
    ? api<{ status: string; timeseries: Record<string, QueryResponse | null> | null }>('GET', `/p/experiments/${experiment.id}/timeseries_results/?metric_uuid=${metric.uuid}&fingerprint=${metric.fingerprint}`).catch(() => null)
    : Promise.resolve(null)), [experiment.id, metric.uuid]);
  const [queued, setQueued] = useState(false);
  const recalc = async () => {
    await api('POST', `/p/experiments/${experiment.id}/recalculate_timeseries/`, { metric, fingerprint: metric.fingerprint });
    setQueued(true);
    setTimeout(() => ts.reload(), 1500);
  };
  const r = q.data;
  const bayes = r?.stats_method !== 'frequentist';
  const fmt = (a: Arm) => (bayes ? `${((a.chance_to_win ?? 0) * 100).toFixed(1)} % to win` : `p = ${a.p_value?.toFixed(4) ?? '–'}`);
  const days = ts.data?.timeseries ? Object.keys(ts.data.timeseries).sort() : [];
  return (
    <article class="metric" data-metric={metric.uuid}>
      <h3>{metricName(metric)}</h3>
      {q.error && <p class="error" role="alert">{q.error}</p>}
      {r && (
        <>
          {r.sample_ratio_mismatch?.mismatch && (
            <p class="warning" role="alert">Sample ratio mismatch: exposures differ from the planned split (p = {r.sample_ratio_mismatch.p_value.toExponential(2)}). Check the exposure events before trusting these results.</p>
          )}
          <IntervalChart
            caption={`${bayes ? '95 % credible' : 'Confidence'} interval of each variant's relative effect against ${r.baseline.key}`}
            rows={[{ key: r.baseline.key, interval: null, significant: false, label: '' },
              ...r.variant_results.map((a) => ({ key: a.key, interval: (bayes ? a.credible_interval : a.confidence_interval) ?? null, significant: a.significant === true, label: fmt(a) }))]} />
          <table class="list results">
            <thead><tr><th scope="col">Variant</th><th scope="col">Exposures</th><th scope="col">Value</th><th scope="col">{bayes ? 'Chance to win' : 'p-value'}</th><th scope="col">Significant</th></tr></thead>
            <tbody>
              {[r.baseline, ...r.variant_results].map((a) => (
                <tr data-variant={a.key}>
                  <td>{a.key}</td><td>{a.number_of_samples}</td><td>{a.number_of_samples ? (a.sum / a.number_of_samples).toFixed(3) : '–'}</td>
                  <td>{a === r.baseline ? 'baseline' : bayes ? `${((a.chance_to_win ?? 0) * 100).toFixed(1)} %` : a.p_value?.toFixed(4) ?? '–'}</td>
                  <td>{a === r.baseline ? '' : a.significant ? 'yes' : 'no'}{a.validation_failures?.length ? ` (${a.validation_failures.join(', ')})` : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <div class="row">
        <button class="link" onClick={recalc} disabled={!metric.uuid}>Recalculate daily results</button>
        {queued && <span role="status">queued</span>}
        {ts.data && <span class="hint">timeseries: {ts.data.status}</span>}
      </div>
      {days.length > 1 && (
        <LineChart title="Chance to win by day (cumulative)" days={days}
          series={(ts.data!.timeseries![days[days.length - 1]!]?.variant_results ?? []).map((v) => ({ label: v.key, data: days.map((d) => (ts.data!.timeseries![d]?.variant_results.find((x) => x.key === v.key)?.chance_to_win ?? 0) * 100) }))} />
      )}
    </article>
  );
}

/** One experiment's page: lifecycle buttons, results per metric, exposures. */
export function ExperimentView({ id }: { id: number }) {
  const x = useLoad(() => api<Experiment>('GET', `/p/experiments/${id}/`), [id]);
  const [error, setError] = useState<string | null>(null);
  const [conclusion, setConclusion] = useState('won');
  const patch = async (body: object) => {
    setError(null);
    try { await api('PATCH', `/p/experiments/${id}/`, body); x.reload(); } catch (e) { setError((e as Error).message); }
  };
  const e = x.data;
  const exposures = useLoad(() => (e?.start_date ? api<{ results: unknown[] }>('POST', '/p/query/', { query: {
    kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '$feature_flag_called', math: 'dau' }], interval: 'day',
    dateRange: { date_from: e.start_date.slice(0, 10) },
    properties: [{ key: '$feature_flag', operator: 'exact', value: e.feature_flag_key, type: 'event' }],
    breakdownFilter: { breakdown: '$feature_flag_response', breakdown_type: 'event' },
  } }) : Promise.resolve(null)), [e?.id, e?.start_date]);
  if (x.error) return <p role="alert" class="error">{x.error}</p>;
  if (!e) return <p>Loading…</p>;
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
      <p>Flag <a href="#/flags"><code>{e.feature_flag_key}</code></a>; variants {(e.parameters?.feature_flag_variants ?? []).map((v) => v.key).join(', ')}.</p>
      {e.start_date === null ? <p class="hint">Launch the experiment to collect exposures and results.</p> : (
        <>
          <h2>Results</h2>
          {e.metrics.length === 0 && <p class="hint">No metrics: add one when creating an experiment.</p>}
          <div class="results-grid">{e.metrics.map((m) => <MetricResult key={m.uuid} experiment={e} metric={m} />)}</div>
          <h2>Exposures</h2>
          {exposures.data && <Insight name="Exposed users per day, by variant" result={exposures.data.results as never} />}
        </>
      )}
    </section>
  );
}
