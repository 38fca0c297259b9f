/**
 * Experiment metrics as the console edits them: a mean (count of one event per user) or a funnel
 * (ordered events), turned into PostHog's `ExperimentMetric` and back. Metrics the form cannot
 * express (math properties, ratio, retention, …) are kept as they are and shown by name.
 */

/** One metric row of a form; `original` is the stored metric it came from (its uuid is kept). */
export interface MetricForm { kind: 'mean' | 'funnel'; events: string; original?: StoredMetric; locked?: boolean }

/** A stored `ExperimentMetric` (the fields the console reads). */
export interface StoredMetric { uuid?: string; fingerprint?: string; name?: string; metric_type: string; source?: { event?: string; math?: string; math_property?: string; [k: string]: unknown }; series?: { event?: string; [k: string]: unknown }[]; [k: string]: unknown }

/** A display name: the metric's name, else its events. */
export function metricName(m: StoredMetric): string {
  return m.name ?? (m.metric_type === 'funnel' ? (m.series ?? []).map((s) => s.event).join(' → ') : `${m.source?.event ?? 'event'} (${m.metric_type})`);
}

/** The `ExperimentMetric` of a form row (the original's uuid kept, so results and timeseries follow it). */
export function toMetric(m: MetricForm): StoredMetric {
  if (m.locked && m.original) return m.original;
  const steps = m.events.split(',').map((s) => s.trim()).filter(Boolean);
  const metric: StoredMetric = m.kind === 'mean'
    ? { kind: 'ExperimentMetric', metric_type: 'mean', name: `${steps[0]} per user`, source: { kind: 'EventsNode', event: steps[0], math: 'total' } }
    : { kind: 'ExperimentMetric', metric_type: 'funnel', name: steps.join(' → '), series: steps.map((event) => ({ kind: 'EventsNode', event })) };
  if (m.original?.uuid) metric.uuid = m.original.uuid;
  return metric;
}

/** The form row of a stored metric; one the form cannot express is `locked` (kept unchanged). */
export function fromMetric(m: StoredMetric): MetricForm {
  const simpleMean = m.metric_type === 'mean' && m.source?.event && (m.source.math ?? 'total') === 'total' && !m.source.math_property;
  if (simpleMean) return { kind: 'mean', events: m.source!.event!, original: m };
  if (m.metric_type === 'funnel' && (m.series ?? []).every((s) => typeof s.event === 'string')) return { kind: 'funnel', events: (m.series ?? []).map((s) => s.event).join(', '), original: m };
  return { kind: 'mean', events: '', original: m, locked: true };
}

const set = <T,>(list: T[], i: number, patch: Partial<T>) => list.map((x, k) => (k === i ? { ...x, ...patch } : x));

/** The metric rows of a form, with "Add a metric"; `legend` names the fieldset. */
export function MetricRows({ legend, metrics, onChange }: { legend: string; metrics: MetricForm[]; onChange(m: MetricForm[]): void }) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {metrics.map((m, i) => (
        <div class="row" key={i}>
          {m.locked ? <span class="grow">{metricName(m.original!)} <span class="hint">(kept as defined through the API)</span></span> : (
            <>
              <label>Type <select value={m.kind} onChange={(e) => onChange(set(metrics, i, { kind: (e.target as HTMLSelectElement).value as MetricForm['kind'] }))}>
                <option value="mean">mean (count of an event per user)</option><option value="funnel">funnel (ordered events)</option>
              </select></label>
              <label class="grow">{m.kind === 'mean' ? 'Event' : 'Steps (comma-separated events)'} <input value={m.events} onInput={(e) => onChange(set(metrics, i, { events: (e.target as HTMLInputElement).value }))} /></label>
            </>
          )}
          <button type="button" class="link" onClick={() => onChange(metrics.filter((_, k) => k !== i))}>Remove</button>
        </div>
      ))}
      <button type="button" class="link" onClick={() => onChange([...metrics, { kind: 'mean', events: '' }])}>Add a metric</button>
    </fieldset>
  );
}

/** The rows worth saving: locked ones and those with at least one event. */
export function filled(metrics: MetricForm[]): StoredMetric[] {
  return metrics.filter((m) => m.locked || m.events.trim() !== '').map(toMetric);
}
