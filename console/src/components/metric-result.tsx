/**
 * One metric's results on an experiment's page: the interval chart, a table per variant with the
 * value people read (a conversion as "16.8 % — 30 / 179", a mean with its n, a ratio with both
 * sums), chance to win or p-value, and the daily cumulative results (E8/E9) with their state:
 * not computed yet (and what Recalculate does), computing (polled until done), failed, or drawn.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from './use-load.js';
import { IntervalChart } from './interval-chart.js';
import { LineChart } from './insight.js';
import { metricName, type StoredMetric } from './metric-form.js';

/** One arm of PostHog's `ExperimentQueryResponse`. */
export interface Arm { key: string; number_of_samples: number; sum: number; denominator_sum?: number; chance_to_win?: number | null; credible_interval?: [number, number] | null; p_value?: number | null; confidence_interval?: [number, number] | null; significant?: boolean; validation_failures?: string[] }
interface QueryResponse { baseline: Arm; variant_results: Arm[]; stats_method: string; sample_ratio_mismatch: { p_value: number; mismatch: boolean } | null }
interface Timeseries { status: string; timeseries: Record<string, QueryResponse | null> | null; errors: Record<string, string> | null; recalculation_status: string | null }

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const dayCount = (n: number) => `${n} day${n === 1 ? '' : 's'}`;

/** What a variant's value reads as: conversion with counts, ratio with sums, or mean with n. */
export function formatValue(metric: StoredMetric, a: Arm): string {
  const n = a.number_of_samples;
  if (metric.metric_type === 'funnel' || metric.metric_type === 'retention' || (metric.metric_type === 'mean' && metric.threshold !== undefined && metric.threshold !== null)) {
    return n === 0 ? `– — 0 / 0` : `${pct(a.sum / n)} — ${a.sum} / ${n}`;
  }
  if (metric.metric_type === 'ratio') return a.denominator_sum ? `${(a.sum / a.denominator_sum).toFixed(3)} (${a.sum} / ${a.denominator_sum})` : '–';
  return n === 0 ? '– (n = 0)' : `${(a.sum / n).toFixed(3)} (n = ${n})`;
}

/** The daily results' state in words, and whether it is still being computed. */
function timeseriesState(t: Timeseries, days: number): { text: string; busy: boolean } {
  const running = t.recalculation_status === 'pending' || t.recalculation_status === 'in_progress' || t.recalculation_status === 'running';
  const done = t.timeseries ? Object.values(t.timeseries).filter((v) => v !== null).length : 0;
  if (t.status === 'completed') return { text: `Daily results computed for all ${dayCount(days)}.`, busy: false };
  if (t.status === 'failed') return { text: `Computing the daily results failed${t.errors ? `: ${Object.values(t.errors)[0]}` : ''}. Recalculate to try again.`, busy: false };
  if (running) return { text: `Computing daily results… ${done} of ${dayCount(days)} done.`, busy: true };
  if (t.status === 'pending') return { text: 'Daily results are not computed yet.', busy: false };
  return { text: `Daily results computed for ${done} of ${dayCount(days)}; recalculate to bring them up to date.`, busy: false };
}

/** One metric's results (`experimentId` launched). */
export function MetricResult({ experimentId, metric }: { experimentId: number; metric: StoredMetric }) {
  const q = useLoad(() => api<QueryResponse>('POST', '/p/query/', { query: { kind: 'ExperimentQuery', experiment_id: experimentId, metric } }), [experimentId, metric.uuid, metric.fingerprint]);
  const ts = useLoad(() => (metric.uuid && metric.fingerprint
    ? api<Timeseries>('GET', `/p/experiments/${experimentId}/timeseries_results/?metric_uuid=${metric.uuid}&fingerprint=${metric.fingerprint}`).catch(() => null)
    : Promise.resolve(null)), [experimentId, metric.uuid, metric.fingerprint]);
  const [error, setError] = useState<string | null>(null);
  const [asked, setAsked] = useState(false);
  const days = ts.data?.timeseries ? Object.keys(ts.data.timeseries).sort() : [];
  const state = ts.data ? timeseriesState(ts.data, days.length) : null;
  const busy = state?.busy === true || (asked && ts.data?.status === 'pending');
  useEffect(() => { // poll while computing; stops once done (or failed)
    if (!busy) return;
    const t = setTimeout(() => ts.reload(), 1500);
    return () => clearTimeout(t);
  }, [busy, ts.data]);
  const recalc = async () => {
    setError(null);
    try {
      await api('POST', `/p/experiments/${experimentId}/recalculate_timeseries/`, { metric, fingerprint: metric.fingerprint });
      setAsked(true);
      ts.reload();
    } catch (e) { setError((e as Error).message); }
  };
  const r = q.data;
  const bayes = r?.stats_method !== 'frequentist';
  const fmt = (a: Arm) => (bayes ? `${pct(a.chance_to_win ?? 0)} to win` : `p = ${a.p_value?.toFixed(4) ?? '–'}`);
  const drawn = days.filter((d) => ts.data!.timeseries![d] !== null);
  return (
    <article class="metric" data-metric={metric.uuid}>
      <h3>{metricName(metric)}</h3>
      {q.error && <p class="error" role="alert">{q.error}</p>}
      {!r && !q.error && <p class="hint">Computing…</p>}
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
            <thead><tr><th scope="col">Variant</th><th scope="col">Exposures</th><th scope="col">{metric.metric_type === 'mean' && metric.threshold == null ? 'Mean' : 'Conversion'}</th><th scope="col">{bayes ? 'Chance to win' : 'p-value'}</th><th scope="col">Significant</th></tr></thead>
            <tbody>
              {[r.baseline, ...r.variant_results].map((a) => (
                <tr data-variant={a.key}>
                  <td>{a.key}</td><td>{a.number_of_samples}</td><td class="value">{formatValue(metric, a)}</td>
                  <td>{a === r.baseline ? 'baseline' : bayes ? pct(a.chance_to_win ?? 0) : a.p_value?.toFixed(4) ?? '–'}</td>
                  <td>{a === r.baseline ? '' : a.significant ? 'yes' : 'no'}{a.validation_failures?.length ? ` (${a.validation_failures.join(', ')})` : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <div class="timeseries-state">
        {state && <p class="hint" role="status">{busy && <span class="spinner" aria-hidden="true" />}{state.text}</p>}
        <div class="row">
          <button class="chip" onClick={recalc} disabled={!metric.uuid || busy}>{busy ? 'Computing…' : 'Recalculate daily results'}</button>
          {error && <span role="alert" class="error">{error}</span>}
        </div>
        <p class="hint">Recalculate runs this metric once for every day since launch, each day cumulative up to its end, in the background; the chart below shows how the chance to win moved.</p>
      </div>
      {drawn.length > 1 && (
        <LineChart title="Chance to win by day (cumulative)" days={drawn}
          series={(ts.data!.timeseries![drawn[drawn.length - 1]!]?.variant_results ?? []).map((v) => ({ label: v.key, data: drawn.map((d) => (ts.data!.timeseries![d]?.variant_results.find((x) => x.key === v.key)?.chance_to_win ?? 0) * 100) }))} />
      )}
    </article>
  );
}
