/**
 * The events explorer (PostHog's Activity → Events): captured events newest first through
 * `GET /events/`, filtered by event name, distinct id, person and one event property
 * `key = value` (an `exact` event property filter); more pages through the API's `next` link;
 * a live tail that asks every 2 s for events newer than the newest shown. Clicking an event opens
 * its properties in place, with a link to its person. `route` comes from the hash:
 * `#/explore/<event|distinct_id|person_id>/<value>` starts with that filter set (the router gives
 * each route its own instance).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { pathOf, personName, utc } from '../components/explore-format.js';
import { PropertyTable } from '../components/property-table.js';
import '../explore.css';

/** An event as `GET /events/` returns it. */
export interface ApiEvent {
  id: string; event: string; distinct_id: string; timestamp: string; properties: Record<string, unknown>;
  person: { is_identified: boolean; distinct_ids: string[]; properties: Record<string, unknown> } | null;
}
interface Filters { event: string; distinct_id: string; person_id: string; key: string; value: string }

const PAGE = 50;
const TAIL_MS = 2000;
const EMPTY: Filters = { event: '', distinct_id: '', person_id: '', key: '', value: '' };

/** The list query for `f` (without paging). */
function query(f: Filters): URLSearchParams {
  const q = new URLSearchParams({ limit: String(PAGE) });
  for (const k of ['event', 'distinct_id', 'person_id'] as const) if (f[k].trim()) q.set(k, f[k].trim());
  if (f.key.trim()) q.set('properties', JSON.stringify([{ key: f.key.trim(), value: f.value, operator: 'exact', type: 'event' }]));
  return q;
}

function initial(route: string[]): Filters {
  const [k, v] = route;
  return k && v !== undefined && ['event', 'distinct_id', 'person_id'].includes(k) ? { ...EMPTY, [k]: decodeURIComponent(v) } : EMPTY;
}

/** The events explorer page. */
export function EventsExplorer({ route }: { route: string[] }) {
  const [form, setForm] = useState<Filters>(() => initial(route));
  const [applied, setApplied] = useState<Filters>(() => initial(route));
  const [events, setEvents] = useState<ApiEvent[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const [tail, setTail] = useState(false);
  const newest = useRef<string | null>(null);

  useEffect(() => {
    let live = true;
    setLoading(true); setError(null); setEvents([]); setNext(null);
    api<{ next: string | null; results: ApiEvent[] }>('GET', `/p/events/?${query(applied)}`).then((r) => {
      if (!live) return;
      setEvents(r.results); setNext(r.next); newest.current = r.results[0]?.timestamp ?? null;
    }, (e: Error) => { if (live) setError(e.message); }).finally(() => { if (live) setLoading(false); });
    return () => { live = false; };
  }, [applied]);

  // Live tail: events after the newest shown (less a second, deduplicated by id, so events that
  // share the newest one's timestamp or arrive slightly out of order are not missed).
  useEffect(() => {
    if (!tail) return;
    let live = true;
    const timer = setInterval(async () => {
      const q = query(applied);
      q.set('limit', '500');
      if (newest.current) q.set('after', new Date(Date.parse(newest.current) - 1000).toISOString());
      try {
        const r = await api<{ results: ApiEvent[] }>('GET', `/p/events/?${q}`);
        if (!live || r.results.length === 0) return;
        setEvents((old) => {
          const seen = new Set(old.map((e) => e.id));
          const fresh = r.results.filter((e) => !seen.has(e.id));
          return fresh.length === 0 ? old : [...fresh, ...old].sort((a, b) => Date.parse(b.timestamp) - Date.parse(a.timestamp));
        });
        if (Date.parse(r.results[0]!.timestamp) > Date.parse(newest.current ?? '1970-01-01T00:00:00Z')) newest.current = r.results[0]!.timestamp;
      } catch (e) { if (live) setError((e as Error).message); }
    }, TAIL_MS);
    return () => { live = false; clearInterval(timer); };
  }, [tail, applied]);

  const more = async () => {
    if (!next) return;
    setLoading(true);
    try {
      const r = await api<{ next: string | null; results: ApiEvent[] }>('GET', pathOf(next));
      setEvents((old) => [...old, ...r.results]); setNext(r.next);
    } catch (e) { setError((e as Error).message); } finally { setLoading(false); }
  };
  const field = (k: keyof Filters, label: string, placeholder = '') => (
    <label>{label} <input value={form[k]} placeholder={placeholder} onInput={(e) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value })} /></label>
  );
  return (
    <section>
      <div class="bar">
        <h1>Events</h1>
        <label class="switch tail"><input type="checkbox" checked={tail} onChange={() => setTail(!tail)} aria-label="Live tail" /><span /> Live tail</label>
      </div>
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setPicked(null); setApplied({ ...form }); }} aria-label="Event filters">
        {field('event', 'Event name', '$pageview')}
        {field('distinct_id', 'Distinct id')}
        {field('key', 'Property', 'key')}
        {field('value', 'equals', 'value')}
        {applied.person_id && <label>Person <input value={form.person_id} readOnly /></label>}
        <div class="row"><button type="submit">Apply filters</button>
          <button type="button" class="chip" onClick={() => { setForm(EMPTY); setApplied(EMPTY); }}>Clear</button></div>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
      <table class="list events">
        <caption class="sr-only">Events, newest first</caption>
        <thead><tr><th scope="col">Event</th><th scope="col">Person</th><th scope="col">Time (UTC)</th></tr></thead>
        <tbody>
          {events.map((e) => [
            <tr key={e.id} class={picked === e.id ? 'picked' : undefined} data-event-id={e.id}>
              <td><button class="link" aria-expanded={picked === e.id} onClick={() => setPicked(picked === e.id ? null : e.id)}>{e.event}</button></td>
              <td class="wrap">{e.person ? <a href={`#/persons/d/${encodeURIComponent(e.distinct_id)}`}>{personName(e.person)}</a> : e.distinct_id}</td>
              <td>{utc(e.timestamp)}</td>
            </tr>,
            picked === e.id && (
              <tr key={`${e.id}-detail`}><td colSpan={3} class="detail">
                <dl class="facts">
                  <dt>Distinct id</dt><dd>{e.distinct_id}</dd>
                  <dt>Person</dt><dd>{e.person ? <a href={`#/persons/d/${encodeURIComponent(e.distinct_id)}`}>Open person {personName(e.person)}</a> : 'none (an event without a person profile)'}</dd>
                  <dt>UUID</dt><dd>{e.id}</dd>
                </dl>
                <PropertyTable properties={e.properties} label={`Properties of ${e.event}`} />
              </td></tr>
            ),
          ])}
        </tbody>
      </table>
      {!loading && events.length === 0 && !error && <p>No events match.</p>}
      <div class="row">
        {next && <button type="button" onClick={more} disabled={loading}>Load more</button>}
        {loading && <span class="hint">Loading…</span>}
      </div>
    </section>
  );
}
