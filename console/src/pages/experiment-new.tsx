/**
 * A new experiment (a draft): name, the flag key it creates, variants and their split, a holdout,
 * and metrics (mean of an event, or a funnel of events).
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';
import { MetricRows, filled, type MetricForm } from '../components/metric-form.js';

/** The new-experiment form; goes to the experiment once created. */
export function ExperimentNew() {
  const [name, setName] = useState('');
  const [flagKey, setFlagKey] = useState('');
  const [variants, setVariants] = useState([{ key: 'control', split: 50 }, { key: 'test', split: 50 }]);
  const [description, setDescription] = useState('');
  const [metrics, setMetrics] = useState<MetricForm[]>([{ kind: 'mean', events: '' }]);
  const [secondary, setSecondary] = useState<MetricForm[]>([]);
  const [holdout, setHoldout] = useState('');
  const [error, setError] = useState<string | null>(null);
  const holdouts = useLoad(() => api<{ results: { id: number; name: string }[] }>('GET', '/p/experiment_holdouts/').catch(() => ({ results: [] })), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const x = await api<{ id: number }>('POST', '/p/experiments/', {
        name, feature_flag_key: flagKey, ...(description.trim() ? { description } : {}),
        parameters: { feature_flag_variants: variants.map((v) => ({ key: v.key, rollout_percentage: v.split })) },
        metrics: filled(metrics), metrics_secondary: filled(secondary),
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
        <label class="block">Description <textarea rows={2} value={description} onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)} /></label>
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
        <MetricRows legend="Primary metrics" metrics={metrics} onChange={setMetrics} />
        <MetricRows legend="Secondary metrics" metrics={secondary} onChange={setSecondary} />
        <label>Holdout <select value={holdout} onChange={(e) => setHoldout((e.target as HTMLSelectElement).value)}>
          <option value="">none</option>
          {holdouts.data?.results.map((h) => <option value={String(h.id)}>{h.name}</option>)}
        </select></label>
        <div class="row"><button type="submit">Create draft</button>{error && <span role="alert" class="error">{error}</span>}</div>
      </form>
    </section>
  );
}
