/**
 * Editing a created experiment: its description and its primary and secondary metrics (PATCH
 * `description`, `metrics`, `metrics_secondary`; a kept metric keeps its uuid, so its results and
 * daily results follow it). Metrics defined through the API that the form cannot express are kept.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { MetricRows, filled, fromMetric, type MetricForm, type StoredMetric } from './metric-form.js';

/** The form; `onSaved` after a successful PATCH, `onCancel` to close it. */
export function ExperimentEdit({ id, description, metrics, secondary, onSaved, onCancel }: {
  id: number; description: string | null; metrics: StoredMetric[]; secondary: StoredMetric[]; onSaved(): void; onCancel(): void;
}) {
  const [text, setText] = useState(description ?? '');
  const [primary, setPrimary] = useState<MetricForm[]>(metrics.map(fromMetric));
  const [second, setSecond] = useState<MetricForm[]>(secondary.map(fromMetric));
  const [error, setError] = useState<string | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      await api('PATCH', `/p/experiments/${id}/`, { description: text, metrics: filled(primary), metrics_secondary: filled(second) });
      onSaved();
    } catch (err) { setError((err as Error).message); }
  };
  return (
    <form class="stack edit-experiment" onSubmit={save}>
      <label class="block">Description <textarea rows={2} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} /></label>
      <MetricRows legend="Primary metrics" metrics={primary} onChange={setPrimary} />
      <MetricRows legend="Secondary metrics" metrics={second} onChange={setSecond} />
      <div class="row">
        <button type="submit">Save metrics</button>
        <button type="button" class="link" onClick={onCancel}>Cancel</button>
        {error && <span role="alert" class="error">{error}</span>}
      </div>
    </form>
  );
}
