/**
 * A new experiment (a draft): name, the flag key it creates, variants and their split, a holdout,
 * and metrics (mean of an event, or a funnel of events).
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';

interface MetricForm { kind: 'mean' | 'funnel'; events: string }

function toMetric(m: MetricForm) {
  const steps = m.events.split(',').map((s) => s.trim()).filter(Boolean);
  return m.kind === 'mean'
    ? { kind: 'ExperimentMetric', metric_type: 'mean', name: `${steps[0]} per user`, source: { kind: 'EventsNode', event: steps[0], math: 'total' } }
    : { kind: 'ExperimentMetric', metric_type: 'funnel', name: steps.join(' → '), series: steps.map((event) => ({ kind: 'EventsNode', event })) };
}

/** The new-experiment form; goes to the experiment once created. */
export function ExperimentNew() {
  const [name, setName] = useState('');
  const [flagKey, setFlagKey] = useState('');
  const [variants, setVariants] = useState([{ key: 'control', split: 50 }, { key: 'test', split: 50 }]);
  const [metrics, setMetrics] = useState<MetricForm[]>([{ kind: 'mean', events: '' }]);
  const [holdout, setHoldout] = useState('');
  const [error, setError] = useState<string | null>(null);
  const holdouts = useLoad(() => api<{ results: { id: number; name: string }[] }>('GET', '/p/experiment_holdouts/').catch(() => ({ results: [] })), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const x = await api<{ id: number }>('POST', '/p/experiments/', {
        name, feature_flag_key: flagKey,
        parameters: { feature_flag_variants: variants.map((v) => ({ key: v.key, rollout_percentage: v.split })) },
        metrics: metrics.filter((m) => m.events.trim() !== '').map(toMetric),
        ...(holdout ? { holdout_id: Number(holdout) } : {}),
      });
      location.hash = `#/experiments/${x.id}`;
    } catch (err) { setError((err as Error).message); }
  };
  const set = <T,>(list: T[], i: number, patch: Partial<T>) => list.map((x, k) => (k === i ? { ...x, ...patch } : x));
  return (
    <section>
      <h1>New experiment</h1>
      <form onSubmit={submit} class="stack">
        <div class="row">
          <label class="grow">Name <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} required /></label>
          <label>Feature flag key <input value={flagKey} onInput={(e) => setFlagKey((e.target as HTMLInputElement).value)} required pattern="[a-zA-Z0-9_\-]+" /></label>
        </div>
        <fieldset>
          <legend>Variants</legend>
          {variants.map((v, i) => (
            <div class="row" key={i}>
              <label>Key <input value={v.key} onInput={(e) => setVariants(set(variants, i, { key: (e.target as HTMLInputElement).value }))} required /></label>
              <label>Split <input type="number" min="0" max="100" value={v.split} onInput={(e) => setVariants(set(variants, i, { split: Number((e.target as HTMLInputElement).value) }))} /> %</label>
              {variants.length > 2 && <button type="button" class="link" onClick={() => setVariants(variants.filter((_, k) => k !== i))}>Remove</button>}
            </div>
          ))}
          <button type="button" class="link" onClick={() => setVariants([...variants, { key: `test-${variants.length}`, split: 0 }])}>Add a variant</button>
        </fieldset>
        <fieldset>
          <legend>Metrics</legend>
          {metrics.map((m, i) => (
            <div class="row" key={i}>
              <label>Type <select value={m.kind} onChange={(e) => setMetrics(set(metrics, i, { kind: (e.target as HTMLSelectElement).value as MetricForm['kind'] }))}>
                <option value="mean">mean (count of an event per user)</option><option value="funnel">funnel (ordered events)</option>
              </select></label>
              <label class="grow">{m.kind === 'mean' ? 'Event' : 'Steps (comma-separated events)'} <input value={m.events} onInput={(e) => setMetrics(set(metrics, i, { events: (e.target as HTMLInputElement).value }))} /></label>
            </div>
          ))}
          <button type="button" class="link" onClick={() => setMetrics([...metrics, { kind: 'mean', events: '' }])}>Add a metric</button>
        </fieldset>
        <label>Holdout <select value={holdout} onChange={(e) => setHoldout((e.target as HTMLSelectElement).value)}>
          <option value="">none</option>
          {holdouts.data?.results.map((h) => <option value={String(h.id)}>{h.name}</option>)}
        </select></label>
        <div class="row"><button type="submit">Create draft</button>{error && <span role="alert" class="error">{error}</span>}</div>
      </form>
    </section>
  );
}
