/**
 * A flag's scheduled changes (PostHog's `scheduled_changes`, model `FeatureFlag`): schedule one at
 * a UTC date-time — enable, disable (`{operation: "update_status", value}`) or add a release
 * condition rolled out to a percentage of everyone (`{operation: "add_release_condition", value:
 * {groups: [{properties: [], rollout_percentage}]}}`); list the flag's changes as pending,
 * executed or failed (with the failure reason); delete a pending one. While a change is pending
 * the list is asked again shortly after its time, and `onExecuted` runs when one has been applied
 * (the flag's page then reloads the flag).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from './use-load.js';
import { utc } from './explore-format.js';
import '../explore.css';

interface Change {
  id: number; record_id: string; scheduled_at: string; executed_at: string | null; failure_reason: string | null;
  payload: { operation?: string; value?: unknown }; created_by: { email?: string | null; first_name?: string } | null;
}
type Kind = 'enable' | 'disable' | 'condition';

/** `{state, label}` of a change: pending until executed; failed when executed with a reason. */
function state(c: Change): 'pending' | 'executed' | 'failed' {
  if (c.executed_at === null) return 'pending';
  return c.failure_reason ? 'failed' : 'executed';
}

/** What a payload does, in words. */
function describe(p: Change['payload']): string {
  if (p.operation === 'update_status') return p.value === true ? 'Enable the flag' : p.value === false ? 'Disable the flag' : `Set status to ${JSON.stringify(p.value)}`;
  if (p.operation === 'add_release_condition') {
    const groups = (p.value as { groups?: { properties?: unknown[]; rollout_percentage?: number | null }[] } | undefined)?.groups ?? [];
    return groups.map((g) => `Add a release condition: ${g.rollout_percentage ?? 100} % of ${g.properties?.length ? 'matching persons' : 'everyone'}`).join('; ') || 'Add a release condition';
  }
  if (p.operation === 'update_variants') return 'Update the variants';
  return `Unknown operation: ${String(p.operation ?? 'none')}`;
}

/** `datetime-local` text for an instant, read as UTC (`YYYY-MM-DDTHH:MM:SS`). */
function localUtc(d: Date): string { return d.toISOString().slice(0, 19); }

/** The scheduled changes section of a flag's page. */
export function FlagSchedule({ flagId, onExecuted }: { flagId: number; onExecuted(): void }) {
  const list = useLoad(() => api<{ results: Change[] }>('GET', `/p/scheduled_changes/?${new URLSearchParams({ model_name: 'FeatureFlag', record_id: String(flagId), limit: '200' })}`), [flagId]);
  const [kind, setKind] = useState<Kind>('enable');
  const [rollout, setRollout] = useState('100');
  const [when, setWhen] = useState(() => localUtc(new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000)));
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const executed = useRef<Set<number> | null>(null);

  const changes = [...(list.data?.results ?? [])].sort((a, b) => Date.parse(b.scheduled_at) - Date.parse(a.scheduled_at));
  // Ask again a moment after the soonest pending change is due (at most a minute apart).
  useEffect(() => {
    const done = new Set(changes.filter((c) => c.executed_at !== null).map((c) => c.id));
    if (executed.current && [...done].some((id) => !executed.current!.has(id))) onExecuted();
    executed.current = done;
    const due = changes.filter((c) => c.executed_at === null).map((c) => Date.parse(c.scheduled_at));
    if (due.length === 0) return;
    const timer = setTimeout(list.reload, Math.min(60_000, Math.max(1_000, Math.min(...due) - Date.now() + 500)));
    return () => clearTimeout(timer);
  }, [list.data]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null); setStatus(null);
    const pct = Number(rollout);
    if (kind === 'condition' && !(Number.isInteger(pct) && pct >= 0 && pct <= 100)) { setError('Rollout must be a whole number from 0 to 100.'); return; }
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(when)) { setError('Pick a date and time.'); return; }
    const payload = kind === 'condition'
      ? { operation: 'add_release_condition', value: { groups: [{ properties: [], rollout_percentage: pct }] } }
      : { operation: 'update_status', value: kind === 'enable' };
    try {
      await api('POST', '/p/scheduled_changes/', { record_id: String(flagId), model_name: 'FeatureFlag', payload, scheduled_at: `${when}Z` });
      setStatus('Scheduled.');
      list.reload();
    } catch (err) { setError((err as Error).message); }
  };
  const remove = async (c: Change) => {
    if (!confirm(`Delete the change scheduled for ${utc(c.scheduled_at)}?`)) return;
    try { await api('DELETE', `/p/scheduled_changes/${c.id}/`); list.reload(); } catch (err) { setError((err as Error).message); }
  };
  return (
    <section class="schedule" aria-labelledby="schedule-heading">
      <h2 id="schedule-heading">Scheduled changes</h2>
      <form class="row" onSubmit={submit} aria-label="Schedule a change">
        <label>Change <select value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as Kind)}>
          <option value="enable">Enable the flag</option>
          <option value="disable">Disable the flag</option>
          <option value="condition">Add a release condition</option>
        </select></label>
        {kind === 'condition' && <label>Rollout (%) <input type="number" min={0} max={100} step={1} value={rollout} onInput={(e) => setRollout((e.target as HTMLInputElement).value)} /></label>}
        <label>When (UTC) <input type="datetime-local" step={1} value={when} onInput={(e) => setWhen((e.target as HTMLInputElement).value)} required /></label>
        <button type="submit">Schedule change</button>
        {status && <span role="status">{status}</span>}
        {error && <span role="alert" class="error">{error}</span>}
      </form>
      <p class="hint">Applied once at that time by the control plane, as you; a time already past applies at once.</p>
      {list.error && <p role="alert" class="error">{list.error}</p>}
      {changes.length > 0 && (
        <table class="list scheduled">
          <caption class="sr-only">Scheduled changes of this flag</caption>
          <thead><tr><th scope="col">When (UTC)</th><th scope="col">Change</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {changes.map((c) => {
              const s = state(c);
              return (
                <tr key={c.id} data-change={c.id} data-state={s}>
                  <td>{utc(c.scheduled_at)}</td>
                  <td>{describe(c.payload)}{c.created_by?.email ? <span class="hint"> · by {c.created_by.email}</span> : null}</td>
                  <td><span class={`badge ${s}`}>{s}</span>{c.executed_at && <span class="hint"> {utc(c.executed_at)}</span>}
                    {s === 'failed' && <div class="error">{c.failure_reason}</div>}
                    {s === 'pending' && c.failure_reason && <div class="hint">Retrying: {c.failure_reason}</div>}</td>
                  <td>{s === 'pending' && <button type="button" class="link danger" onClick={() => remove(c)} aria-label={`Delete the change scheduled for ${utc(c.scheduled_at)}`}>Delete</button>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {list.data && changes.length === 0 && <p>No scheduled changes.</p>}
    </section>
  );
}
