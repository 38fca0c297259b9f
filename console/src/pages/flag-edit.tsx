/**
 * One flag: create or edit its key, name, condition sets, variants and payloads; enable or
 * disable it; soft-delete or restore it; its status, its activity with field diffs, and its
 * usage dashboard (the insights computed from the events the nodes captured).
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ConditionSets, Variants, type ConditionSet, type Variant } from '../components/condition-sets.js';
import { useLoad } from '../components/use-load.js';
import { Insight } from '../components/insight.js';
import { FlagSchedule } from '../components/flag-schedule.js';
import { ActivityList, type ActivityEntry } from '../components/activity.js';

interface StoredProperty { key: string; operator?: string; value: unknown; type?: string }
interface Flag {
  id: number; key: string; name: string; active: boolean; deleted: boolean; version: number; usage_dashboard: number | null;
  filters: { groups?: { properties?: StoredProperty[]; rollout_percentage?: number | null }[]; multivariate?: { variants: Variant[] } | null; payloads?: Record<string, unknown> };
}

function toForm(f: Flag): { groups: ConditionSet[]; variants: Variant[]; payloads: Record<string, string> } {
  return {
    groups: (f.filters.groups ?? []).map((g) => ({
      rollout_percentage: g.rollout_percentage ?? 100,
      properties: (g.properties ?? []).map((p) => ({
        type: p.type === 'cohort' ? 'cohort' : 'person', key: p.key, operator: p.operator ?? 'exact',
        value: Array.isArray(p.value) ? p.value.join(', ') : p.value === undefined || p.value === null ? '' : String(p.value),
      })),
    })),
    variants: f.filters.multivariate?.variants.map((v) => ({ key: v.key, rollout_percentage: v.rollout_percentage })) ?? [],
    payloads: Object.fromEntries(Object.entries(f.filters.payloads ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])),
  };
}

function toFilters(groups: ConditionSet[], variants: Variant[], payloads: Record<string, string>) {
  const props = groups.map((g) => ({
    rollout_percentage: g.rollout_percentage,
    properties: g.properties.map((p) => p.type === 'cohort'
      ? { key: 'id', type: 'cohort', value: Number(p.value) }
      : { key: p.key, type: 'person', operator: p.operator, value: ['is_set', 'is_not_set'].includes(p.operator) ? p.operator : ['exact', 'is_not'].includes(p.operator) ? p.value.split(',').map((s) => s.trim()) : p.value }),
  }));
  const kept = Object.fromEntries(Object.entries(payloads).filter(([, v]) => v.trim() !== ''));
  return { groups: props, multivariate: variants.length > 0 ? { variants } : null, payloads: kept };
}

interface Activity { results: ActivityEntry[] }

/** A flag's page (`id` null: a new flag). */
export function FlagEdit({ id }: { id: number | null }) {
  const flag = useLoad(() => (id === null ? Promise.resolve(null) : api<Flag>('GET', `/p/feature_flags/${id}/`)), [id]);
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [groups, setGroups] = useState<ConditionSet[]>([{ properties: [], rollout_percentage: 100 }]);
  const [variants, setVariants] = useState<Variant[]>([]);
  const [payloads, setPayloads] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  useEffect(() => {
    const f = flag.data;
    if (!f) return;
    setKey(f.key); setName(f.name);
    const form = toForm(f);
    setGroups(form.groups.length ? form.groups : [{ properties: [], rollout_percentage: 100 }]);
    setVariants(form.variants); setPayloads(form.payloads);
  }, [flag.data]);
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null); setSaved(null);
    try {
      const body = { key, name, filters: toFilters(groups, variants, payloads) };
      if (id === null) {
        const created = await api<Flag>('POST', '/p/feature_flags/', body);
        location.hash = `#/flags/${created.id}`;
      } else {
        await api('PATCH', `/p/feature_flags/${id}/`, body);
        setSaved('Saved.');
        flag.reload();
      }
    } catch (err) { setError((err as Error).message); }
  };
  const patch = async (body: object) => {
    try { await api('PATCH', `/p/feature_flags/${id}/`, body); flag.reload(); } catch (err) { setError((err as Error).message); }
  };
  const f = flag.data;
  return (
    <section>
      <div class="bar">
        <h1>{id === null ? 'New flag' : f?.key ?? 'Flag'}</h1>
        {f && !f.deleted && <label class="switch big"><input type="checkbox" checked={f.active} onChange={() => patch({ active: !f.active })} aria-label="Enabled" /><span /> {f.active ? 'Enabled' : 'Disabled'}</label>}
        {f && (f.deleted
          ? <button onClick={() => patch({ deleted: false })}>Restore</button>
          : <button class="danger" onClick={() => { if (confirm(`Delete ${f.key}?`)) void patch({ deleted: true }); }}>Delete</button>)}
      </div>
      {flag.error && <p role="alert" class="error">{flag.error}</p>}
      {f?.deleted && <p class="notice">This flag is deleted; nodes no longer serve it. Restore it to edit.</p>}
      <form onSubmit={save} class="stack">
        <div class="row">
          <label>Key <input value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required pattern="[a-zA-Z0-9_\-]+" /></label>
          <label class="grow">Description <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
        </div>
        <ConditionSets groups={groups} onChange={setGroups} />
        <Variants variants={variants} payloads={payloads} onChange={setVariants} onPayloads={setPayloads} />
        <div class="row">
          <button type="submit" disabled={f?.deleted}>{id === null ? 'Create flag' : 'Save'}</button>
          {saved && <span role="status">{saved}</span>}
          {error && <span role="alert" class="error">{error}</span>}
        </div>
      </form>
      {f && !f.deleted && <FlagSchedule flagId={f.id} onExecuted={flag.reload} />}
      {f && <FlagDetails flag={f} />}
    </section>
  );
}

function FlagDetails({ flag }: { flag: Flag }) {
  const status = useLoad(() => api<{ status: string; reason: string }>('GET', `/p/feature_flags/${flag.id}/status/`), [flag.id, flag.version]);
  const activity = useLoad(() => api<Activity>('GET', `/p/feature_flags/${flag.id}/activity/?limit=20`), [flag.id, flag.version]);
  const dashboard = useLoad(() => (flag.usage_dashboard === null ? Promise.resolve(null)
    : api<{ tiles: { insight: { id: number; name: string; query: any; result: any } }[] }>('GET', `/p/dashboards/${flag.usage_dashboard}/`)), [flag.usage_dashboard]);
  return (
    <>
      <h2>Status</h2>
      {status.data && <p><span class={`badge ${status.data.status.toLowerCase()}`}>{status.data.status.toLowerCase()}</span> {status.data.reason}</p>}
      {dashboard.data && (
        <>
          <h2>Usage (last 30 days)</h2>
          <div class="tiles">{dashboard.data.tiles.map((t) => <Insight key={t.insight.id} name={t.insight.name} query={t.insight.query} result={t.insight.result} />)}</div>
        </>
      )}
      <h2>Activity</h2>
      {activity.error && <p class="error">{activity.error}</p>}
      {activity.data && <ActivityList entries={activity.data.results} />}
    </>
  );
}
