/**
 * PostHog's `TrendsQuery` over Switchyard's event store (the usage dashboards'
 * insights; PostHog `trends_query_runner`): per series, a count per interval bucket in the
 * project's time zone, optionally broken down by one event property.
 *
 * Query fields read:
 * - `series`: `[{kind: "EventsNode", event: <name> | null (all events), math, math_property,
 *   properties, custom_name}]`; `math` one of total (default), dau (distinct persons), unique_session,
 *   sum / avg / min / max / median of `math_property`.
 * - `dateRange {date_from (default -7d), date_to (default now), explicitDate}` (./date-range.ts),
 *   `interval` (hour, day default, week from Sunday, month); unless `explicitDate`, the range
 *   starts at the beginning of its first bucket.
 * - `properties`: event property filters, a list or an AND/OR group (events/property-filters.ts).
 * - `breakdownFilter {breakdown: <event property>, breakdown_type: "event", breakdown_limit (25)}`:
 *   one result per value, the values with the largest totals first; the rest fold into
 *   `$$_posthog_breakdown_other_$$`, a missing or empty value is `$$_posthog_breakdown_null_$$`.
 * - `trendsFilter.display`: ActionsLineGraph and the other time series give `data` per bucket;
 *   ActionsLineGraphCumulative sums them (for dau, each person counts from their first bucket);
 *   ActionsTable, ActionsPie, ActionsBarValue, BoldNumber and WorldMap give one `aggregated_value`
 *   over the whole range (dau: distinct persons over the range, not a sum of days).
 *
 * Result item: `{data, labels ("1-Nov-2026"), days ("2026-11-01", hours "2026-11-01 13:00:00"),
 * count (sum of data), label, action, filter, breakdown_value?, aggregated_value?}`, ordered by
 * series then breakdown rank. @throws ApiError 400 for a shape it cannot compute.
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import type { PendingQuery } from 'postgres';
import type { Handle } from '../db/connect.js';
import { errors } from '../../errors.js';
import { eventFiltersSql, numericProperty } from '../events/property-filters.js';
import { entitySql, hasMerges, personJoinSql } from '../events/person-merges.js';
import { INTERVALS, type Interval, parseDateBound } from './date-range.js';

type Obj = JsonObject;

/** Breakdown value of the values past `breakdown_limit` (PostHog's marker). */
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';
/** Breakdown value of events without the property (PostHog's marker). */
export const BREAKDOWN_NULL = '$$_posthog_breakdown_null_$$';
/** Displays that answer one number per series (and breakdown value) instead of a time series. */
export const AGGREGATED_DISPLAYS: ReadonlySet<string> = new Set(['ActionsTable', 'ActionsPie', 'ActionsBarValue', 'BoldNumber', 'WorldMap']);
const DEFAULT_BREAKDOWN_LIMIT = 25;
/** Most buckets one series may have (a year of hours is 8,784). */
export const MAX_BUCKETS = 10_000;
/** Shortest length of each interval, in ms (months and DST days are longer or shorter by a little). */
const UNIT_MS: Readonly<Record<Interval, number>> = { hour: 3_600_000, day: 86_400_000, week: 604_800_000, month: 28 * 86_400_000 };
const MAX_SERIES = 50;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MATHS = new Set(['total', 'dau', 'unique_session', 'sum', 'avg', 'min', 'max', 'median']);

/** The project a query runs in. */
export interface QueryProject { id: number; timezone: string }

/** SQL of the local bucket start of `e.timestamp` (week from Sunday, PostHog's default week start). */
function bucketSql(sql: Handle, interval: Interval, tz: string) {
  const local = sql`(e.timestamp AT TIME ZONE ${tz})`;
  return interval === 'week'
    ? sql`(date_trunc('week', ${local} + interval '1 day') - interval '1 day')`
    : sql`date_trunc(${interval}, ${local})`;
}

/** SQL of one series' aggregate over its events (alias `e`; `person` = the event's person after merges). */
function mathSql(sql: Handle, series: Obj, attr: string, person: PendingQuery<any>) { // eslint-disable-line @typescript-eslint/no-explicit-any
  const math = String(series.math ?? 'total');
  const prop = typeof series.math_property === 'string' ? series.math_property : null;
  switch (math) {
    case 'total': return sql`count(*)::float8`;
    case 'dau': return sql`count(DISTINCT ${person})::float8`;
    case 'unique_session': return sql`count(DISTINCT NULLIF(e.properties->>'$session_id', ''))::float8`;
    default: {
      if (prop === null) throw errors.validation(`math "${math}" needs a math_property.`, `${attr}__math_property`);
      const v = numericProperty(sql, prop);
      if (math === 'median') return sql`percentile_cont(0.5) WITHIN GROUP (ORDER BY ${v})::float8`;
      return sql`${sql.unsafe(math)}(${v})::float8`;
    }
  }
}

/** Format of a local bucket start as SQL gives it (`YYYY-MM-DD HH:00:00`). */
const LOCAL_TEXT = 'YYYY-MM-DD HH24:MI:SS';

/** `days` and `labels` entries of a local bucket start (`YYYY-MM-DD HH:MM:SS`). */
function bucketNames(local: string, interval: Interval): { day: string; label: string } {
  const [y, mo, d, h] = [local.slice(0, 4), Number(local.slice(5, 7)), Number(local.slice(8, 10)), local.slice(11, 13)];
  const day = local.slice(0, 10);
  const label = `${d}-${MONTHS[mo - 1]}-${y}`;
  return interval === 'hour' ? { day: `${day} ${h}:00:00`, label: `${label} ${h}:00` } : { day, label };
}

function checkQuery(query: Obj): { series: Obj[]; interval: Interval; display: string; breakdown: string | null; limit: number } {
  const series = query.series;
  if (!Array.isArray(series) || series.length === 0) throw errors.validation('series must be a non-empty list of EventsNode.', 'series');
  if (series.length > MAX_SERIES) throw errors.validation(`At most ${MAX_SERIES} series.`, 'series');
  series.forEach((s, i) => {
    if (!isJsonObject(s) || s.kind !== 'EventsNode') throw errors.validation('Only EventsNode series can be computed from Switchyard\'s event store.', `series__${i}`);
    if (s.event !== undefined && s.event !== null && typeof s.event !== 'string') throw errors.validation('event must be a string or null.', `series__${i}__event`);
    if (!MATHS.has(String(s.math ?? 'total'))) throw errors.validation(`math "${String(s.math)}" cannot be computed here.`, `series__${i}__math`);
  });
  const interval = (query.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw errors.validation(`interval must be one of ${INTERVALS.join(', ')}.`, 'interval');
  if (query.compareFilter && isJsonObject(query.compareFilter) && query.compareFilter.compare === true) {
    throw errors.validation('compareFilter is not supported.', 'compareFilter');
  }
  const trends = isJsonObject(query.trendsFilter) ? query.trendsFilter : {};
  if (typeof trends.formula === 'string' && trends.formula !== '') throw errors.validation('Formulas are not supported.', 'trendsFilter');
  const display = typeof trends.display === 'string' ? trends.display : 'ActionsLineGraph';
  const bf = isJsonObject(query.breakdownFilter) ? query.breakdownFilter : {};
  let breakdown: string | null = null;
  if (bf.breakdown !== undefined && bf.breakdown !== null) {
    if (typeof bf.breakdown !== 'string') throw errors.validation('breakdown must be one event property name.', 'breakdownFilter');
    if ((bf.breakdown_type ?? 'event') !== 'event') throw errors.validation('Only event property breakdowns are supported.', 'breakdownFilter');
    breakdown = bf.breakdown;
  }
  const limit = Number(bf.breakdown_limit ?? DEFAULT_BREAKDOWN_LIMIT);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw errors.validation('breakdown_limit must be an integer from 1 to 1000.', 'breakdownFilter');
  return { series: series as Obj[], interval, display, breakdown, limit };
}

/**
 * Runs a TrendsQuery for `project` at `now`. @returns PostHog's TrendsQueryResponse shape.
 * @throws ApiError 400 for an invalid or unsupported query.
 */
export async function runTrendsQuery(sql: Handle, project: QueryProject, query: Obj, now: Date = new Date()): Promise<Obj> {
  const { series, interval, display, breakdown, limit } = checkQuery(query);
  const tz = project.timezone || 'UTC';
  const range = isJsonObject(query.dateRange) ? query.dateRange : {};
  const fromBound = parseDateBound(range.date_from ?? '-7d', now, tz, false);
  const to = range.date_to === undefined || range.date_to === null ? now : (parseDateBound(range.date_to, now, tz, true) as { at: Date }).at;
  let from: Date;
  if ('all' in fromBound) {
    const [r] = await sql<{ first: Date | null }[]>`SELECT min(timestamp) AS first FROM events WHERE project_id = ${project.id}`;
    from = r!.first ?? now;
  } else from = fromBound.at;
  if (from > to) throw errors.validation('date_from must be before date_to.', 'dateRange');

  // The buckets: local bucket starts from the one holding `from` to the one holding `to`.
  const trunc = (at: Date) => interval === 'week'
    ? sql`(date_trunc('week', (${at}::timestamptz AT TIME ZONE ${tz}) + interval '1 day') - interval '1 day')`
    : sql`date_trunc(${interval}, ${at}::timestamptz AT TIME ZONE ${tz})`;
  // Unless the range is explicit, it starts at the beginning of its first bucket (PostHog's
  // QueryDateRange: `-7d` by day is seven whole days and today).
  if (range.explicitDate !== true) {
    const [r] = await sql<{ at: Date }[]>`SELECT (${trunc(from)}) AT TIME ZONE ${tz} AS at`;
    from = r!.at;
  }
  const span = (to.getTime() - from.getTime()) / UNIT_MS[interval];
  if (span > MAX_BUCKETS) throw errors.validation(`The date range holds more than ${MAX_BUCKETS} ${interval}s: use a larger interval or a shorter range.`, 'dateRange');
  // Buckets travel as local wall-clock text, so nothing depends on this process' time zone.
  const buckets = (await sql<{ b: string }[]>`SELECT to_char(g, ${LOCAL_TEXT}) AS b FROM generate_series(${trunc(from)}, ${trunc(to)}, ${`1 ${interval}`}::interval) g`).map((r) => r.b);
  const bucketIndex = new Map(buckets.map((b, i) => [b, i]));
  const names = buckets.map((b) => bucketNames(b, interval));
  const aggregated = AGGREGATED_DISPLAYS.has(display);
  const cumulative = display === 'ActionsLineGraphCumulative';
  const filters = eventFiltersSql(sql, query.properties, 'properties');
  const merges = series.some((s) => s.math === 'dau') && await hasMerges(sql, project.id);
  const person = entitySql(sql, null, merges);
  const join = personJoinSql(sql, null, merges);
  const results: Obj[] = [];

  for (const [i, s] of series.entries()) {
    const attr = `series__${i}`;
    const event = typeof s.event === 'string' ? s.event : null;
    const where = sql`e.project_id = ${project.id} ${event === null ? sql`` : sql`AND e.event = ${event}`}
      AND e.timestamp >= ${from} AND e.timestamp <= ${to} AND ${filters} AND ${eventFiltersSql(sql, s.properties, `${attr}__properties`)}`;
    const bv = breakdown === null ? sql`NULL::text` : sql`COALESCE(NULLIF(e.properties->>${breakdown}, ''), ${BREAKDOWN_NULL})`;
    // Breakdown values ranked by their total over the range; past the limit they fold into "other".
    let values: string[] = [''];
    if (breakdown !== null) {
      const ranked = await sql<{ v: string }[]>`SELECT ${bv} AS v FROM events e ${join} WHERE ${where} GROUP BY 1 ORDER BY ${mathSql(sql, s, attr, person)} DESC, 1 LIMIT ${limit + 1}`;
      values = ranked.map((r) => r.v);
    }
    const kept = breakdown === null ? null : values.slice(0, limit);
    const folded = breakdown !== null && values.length > limit;
    const valueSql = kept === null ? sql`''` : folded
      ? sql`(CASE WHEN ${bv} = ANY(${sql.array(kept)}::text[]) THEN ${bv} ELSE ${BREAKDOWN_OTHER} END)` : bv;
    const shown = kept === null ? [''] : folded ? [...kept, BREAKDOWN_OTHER] : kept;
    const perValue = new Map(shown.map((v) => [v, { data: new Array<number>(buckets.length).fill(0), total: 0 }]));
    const math = String(s.math ?? 'total');
    const distinct = math === 'dau' ? sql`${person}::text` : math === 'unique_session' ? sql`NULLIF(e.properties->>'$session_id', '')` : null;
    if (aggregated) {
      const rows = await sql<{ v: string; n: number }[]>`SELECT ${valueSql} AS v, ${mathSql(sql, s, attr, person)} AS n FROM events e ${join} WHERE ${where} GROUP BY 1`;
      for (const r of rows) if (perValue.has(r.v)) perValue.get(r.v)!.total = r.n ?? 0;
    } else if (cumulative && distinct !== null) {
      // Cumulative distinct counts: each person (session) counts once, from its first bucket on.
      const rows = await sql<{ v: string; b: string; n: number }[]>`SELECT v, b, count(*)::float8 AS n FROM (
          SELECT ${valueSql} AS v, ${distinct} AS who, to_char(min(${bucketSql(sql, interval, tz)}), ${LOCAL_TEXT}) AS b FROM events e ${join} WHERE ${where} AND ${distinct} IS NOT NULL GROUP BY 1, 2) f
        GROUP BY 1, 2`;
      for (const r of rows) { const at = bucketIndex.get(r.b); if (at !== undefined && perValue.has(r.v)) perValue.get(r.v)!.data[at]! += r.n; }
    } else {
      const rows = await sql<{ v: string; b: string; n: number }[]>`SELECT ${valueSql} AS v, to_char(${bucketSql(sql, interval, tz)}, ${LOCAL_TEXT}) AS b, ${mathSql(sql, s, attr, person)} AS n
        FROM events e ${join} WHERE ${where} GROUP BY 1, 2`;
      for (const r of rows) { const at = bucketIndex.get(r.b); if (at !== undefined && perValue.has(r.v)) perValue.get(r.v)!.data[at] = r.n ?? 0; }
    }
    const name = event ?? 'All events';
    const action = {
      id: event, type: 'events', order: i, name, custom_name: s.custom_name ?? null, math: s.math ?? 'total',
      math_property: s.math_property ?? null, math_group_type_index: s.math_group_type_index ?? null, properties: s.properties ?? [],
    };
    for (const v of shown) {
      const { data, total } = perValue.get(v)!;
      if (cumulative) for (let k = 1; k < data.length; k++) data[k]! += data[k - 1]!;
      const item: Obj = {
        data: aggregated ? [] : data,
        labels: aggregated ? [] : names.map((n) => n.label),
        days: aggregated ? [] : names.map((n) => n.day),
        count: aggregated ? 0 : cumulative ? data[data.length - 1] ?? 0 : data.reduce((a, b) => a + b, 0),
        label: breakdown === null ? String(s.custom_name ?? name) : v,
        action,
        filter: { date_from: from.toISOString(), date_to: to.toISOString(), interval, display, breakdown, breakdown_type: breakdown === null ? null : 'event' },
      };
      if (aggregated) item.aggregated_value = total;
      if (breakdown !== null) item.breakdown_value = v;
      results.push(item);
    }
  }
  return {
    results, is_cached: false, last_refresh: now.toISOString(), next_allowed_client_refresh: now.toISOString(), timezone: tz,
    hasMore: false, hogql: null, modifiers: {}, timings: [], query_status: null,
    resolved_date_range: { date_from: from.toISOString(), date_to: to.toISOString() },
  };
}
