/**
 * Per-entity metric values of the exposed entities (research/experiments.md §3): rows
 * `(entity, variant, value, denom, step, cov)` (`cov`: CUPED's pre-exposure covariate, mean metrics), read once as a subquery or materialised as the
 * temporary table `exp_values` ({@link materializeValues}). Event scans are bounded by the
 * experiment's window and by the exposures' span ({@link ExposureSpan}).
 *
 * - mean: metric events at/after the entity's first exposure and, with a conversion window W,
 *   before its first exposure + W (events `[start, end + W)`; PostHog anchors the window on the
 *   first exposure, so a later re-exposure does not extend it); value by `math` — total (count),
 *   sum/avg/min/max of the numeric property (missing or non-numeric → 0), unique_session,
 *   dau, unique_group, hogql (./hogql-math.ts); entities without events count as 0.
 * - ratio: numerator and denominator each as a mean source (`value`, `denom`).
 * - funnel: the exposure is step 0; steps 1…k from the first exposure within W (default three
 *   years) and up to the end (end + W with a conversion window), ordered (each step at/after the
 *   previous one, strictly after when both steps name the same event: one event is one step; the
 *   earliest next event is taken, which maximises the steps reached) or unordered (steps in any
 *   order); `step` = highest step
 *   reached (unordered: steps done), value 1 when every step was reached.
 * - retention: only entities with a start event at/after their first exposure (and, with a
 *   conversion window W, at most W after it, inclusive); start = the first (or last) such event; retained (1) when a later completion event falls between
 *   start + window_start and start + window_end units (day or hour, truncated in the project's
 *   time zone). With `maturedBy` (only_count_matured_users), only start events whose window end
 *   (window_end units after it) has passed by then count (PostHog anchors maturity on the start).
 *
 * Where the rows come from: persons without merges, a funnel of plain event steps and a mean
 * that counts one plain event (total or dau, no CUPED) read ingestion's per-person event times
 * (summary-funnel.ts, summary-count.ts; person-times.ts says which sources qualify); other
 * person funnels probe the events index per person and step ({@link probedFunnel}); the rest
 * scan the events.
 */
import { type JsonObject, isJsonObject } from '../../../json-shapes.js';
import type { Tx } from '../../db/connect.js';
import { errors } from '../../../errors.js';
import { eventFiltersSql, numericProperty } from '../../events/property-filters.js';
import { entitySql, personJoinSql } from '../../events/person-merges.js';
import { eventPartitionsBetween } from '../../ingestion/event-partitions.js';
import { afterStep, summaryFunnel } from './summary-funnel.js';
import { countedMath, summaryCount } from './summary-count.js';
import { readableFromPersonTimes } from './person-times.js';
import { hogqlAggregateSql, hogqlValueSql, parseHogqlMath } from './hogql-math.js';

type Obj = JsonObject;

/** Seconds per conversion-window unit (`month` is 30 days, as PostHog). */
export const WINDOW_UNIT_SECONDS: Readonly<Record<string, number>> = { second: 1, minute: 60, hour: 3600, day: 86_400, week: 604_800, month: 2_592_000 };
/** A funnel's window when the metric sets none (PostHog's UDF default: three years). */
export const DEFAULT_FUNNEL_WINDOW_SECONDS = 3 * 365 * 86_400;

/** Where and how the values are computed. */
export interface ValueSpec {
  projectId: number;
  groupIndex: number | null;
  /** Whether person merges must be applied (see exposures.ts `hasMerges`). */
  merges: boolean;
  /** When the exposures happened (bounds the event scans). */
  span: ExposureSpan;
  /**
   * CUPED (research/experiments.md §4.6): days before each entity's first exposure whose values of
   * the same metric are its covariate (`cov`); null = no covariate (0).
   */
  cupedLookbackDays: number | null;
  start: Date;
  end: Date;
  timezone: string;
  /**
   * `only_count_matured_users` for retention: the instant by which a start event's retention
   * window (window end, in its unit) must have elapsed for the entity to count; null = no such rule.
   */
  maturedBy?: Date | null;
}

/** The metric's conversion window in seconds (0 = none). */
export function windowSeconds(metric: Obj): number {
  const n = Number(metric.conversion_window ?? 0);
  if (!(n > 0)) return 0;
  return n * (WINDOW_UNIT_SECONDS[String(metric.conversion_window_unit ?? 'day')] ?? 86_400);
}

/** SELECT of one source's events (entity, ts, num, session, grp) up to `until` (`inclusive` or not). */
function sourceEvents(tx: Tx, s: ValueSpec, source: unknown, attr: string, until: Date, inclusive: boolean, from: Date = s.start) {
  if (!isJsonObject(source) || source.kind !== 'EventsNode') throw errors.validation('Only EventsNode sources can be computed from Switchyard\'s event store.', attr);
  const event = source.event;
  const mathProperty = typeof source.math_property === 'string' ? source.math_property : null;
  const groupKey = `$group_${Number(source.math_group_type_index ?? 0)}`;
  // Only what the math reads: a count or a funnel step reads (event, time, person) alone, which
  // the events_project_event_time_person index covers (an index-only scan, no event row read).
  const math = source.math ?? 'total';
  const num = math === 'hogql' ? hogqlValueSql(tx, parseHogqlMath(source.math_hogql, `${attr}__math_hogql`).value)
    : mathProperty && ['sum', 'avg', 'min', 'max'].includes(String(math)) ? numericProperty(tx, mathProperty) : tx`0::float8`;
  return tx`SELECT ${entitySql(tx, s.groupIndex, s.merges)} AS entity, e.timestamp AS ts,
      ${num} AS num,
      ${math === 'unique_session' ? tx`(e.properties->>'$session_id')` : tx`NULL::text`} AS session,
      ${math === 'unique_group' ? tx`(e.properties->>${groupKey})` : tx`NULL::text`} AS grp
    FROM events e ${personJoinSql(tx, s.groupIndex, s.merges)}
    WHERE e.project_id = ${s.projectId} ${typeof event === 'string' ? tx`AND e.event = ${event}` : tx``}
      AND e.timestamp >= ${from} AND ${inclusive ? tx`e.timestamp <= ${until}` : tx`e.timestamp < ${until}`}
      AND ${eventFiltersSql(tx, source.properties, `${attr}__properties`)}`;
}

/** Aggregate of a source's events per entity, by `math`. */
function aggregate(tx: Tx, source: Obj, attr: string) {
  switch (source.math ?? 'total') {
    case 'total': return tx`count(*)::float8`;
    case 'sum': return tx`sum(s.num)`;
    case 'avg': return tx`avg(s.num)`;
    case 'min': return tx`min(s.num)`;
    case 'max': return tx`max(s.num)`;
    case 'unique_session': return tx`count(DISTINCT NULLIF(s.session, ''))::float8`;
    case 'dau': return tx`1::float8`;
    case 'unique_group': return tx`count(DISTINCT s.grp)::float8`;
    case 'hogql': return hogqlAggregateSql(tx, parseHogqlMath(source.math_hogql, `${attr}__math_hogql`));
    default: throw errors.validation(`math "${String(source.math)}" cannot be computed here.`, `${attr}__math`);
  }
}

/**
 * The span of the first exposures (earliest and latest): no metric event outside `[earliest
 * first exposure, latest first exposure + W]` can count for anyone, so the event scans are
 * bounded by it as well as by the experiment's window.
 */
export interface ExposureSpan { minFirst: Date | null; maxFirst: Date | null }

/** Reads {@link ExposureSpan} from `exp_exposed`. */
export async function exposureSpan(tx: Tx): Promise<ExposureSpan> {
  const [r] = await tx<ExposureSpan[]>`SELECT min(first_exposure) AS "minFirst", max(first_exposure) AS "maxFirst" FROM exp_exposed`;
  return r!;
}

const later = (a: Date, b: Date | null) => (b !== null && b > a ? b : a);
const earlier = (a: Date, b: Date | null) => (b !== null && b < a ? b : a);

/** SELECT of a source's value per exposed entity over the `days` before its first exposure (CUPED's covariate). */
function covariateValues(tx: Tx, s: ValueSpec, source: unknown, days: number) {
  const from = new Date((s.span.minFirst ?? s.start).getTime() - days * 86_400_000);
  const events = sourceEvents(tx, s, source, 'metric__source', s.span.maxFirst ?? s.end, false, from);
  return tx`SELECT x.entity, ${aggregate(tx, source as Obj, 'metric__source')} AS value
    FROM exp_exposed x JOIN (${events}) s ON s.entity = x.entity
      AND s.ts >= x.first_exposure - make_interval(days => ${days}) AND s.ts < x.first_exposure
    GROUP BY x.entity`;
}

/**
 * The bounds of a mean-like source's event scan: from the window's start or the earliest first
 * exposure, up to the end (w = 0, inclusive) or the earlier of end + W and the latest first exposure + W.
 */
function sourceBounds(s: ValueSpec, w: number): { from: Date; until: Date } {
  const until = w > 0 ? earlier(new Date(s.end.getTime() + w * 1000), s.span.maxFirst && new Date(s.span.maxFirst.getTime() + w * 1000)) : s.end;
  return { from: later(s.start, s.span.minFirst), until };
}

/** SELECT of one mean-like source's value per exposed entity (entities without events are absent). */
function sourceValues(tx: Tx, s: ValueSpec, source: unknown, attr: string, w: number) {
  const { from, until } = sourceBounds(s, w);
  const events = sourceEvents(tx, s, source, attr, until, w === 0, from);
  return tx`SELECT x.entity, ${aggregate(tx, source as Obj, attr)} AS value
    FROM exp_exposed x JOIN (${events}) s ON s.entity = x.entity AND s.ts >= x.first_exposure
      ${w > 0 ? tx`AND s.ts < x.first_exposure + make_interval(secs => ${w})` : tx``}
    GROUP BY x.entity`;
}

/** Step events of a funnel or retention, `exp_steps(entity, k, ts)`, for exposed entities only. */
async function stepEvents(tx: Tx, s: ValueSpec, sources: unknown[], attr: string, w: number): Promise<void> {
  await tx`CREATE TEMP TABLE exp_steps (entity ${s.groupIndex === null ? tx`uuid` : tx`text`}, k int, ts timestamptz) ON COMMIT DROP`;
  const until = new Date(s.end.getTime() + w * 1000);
  for (const [i, source] of sources.entries()) {
    const events = sourceEvents(tx, s, source, `${attr}__${i}`, until, true);
    await tx`INSERT INTO exp_steps SELECT x.entity, ${i + 1}, s.ts
      FROM exp_exposed x JOIN (${events}) s ON s.entity = x.entity AND s.ts >= x.first_exposure
        AND s.ts <= x.first_exposure + make_interval(secs => ${w})`;
  }
  await tx`CREATE INDEX ON exp_steps (entity, k, ts)`;
  await tx`ANALYZE exp_steps`;
}

/**
 * The relation of per-entity values: the `exp_values` table, or a subquery read once. Wrapped in
 * an object because a SQL fragment is a thenable: returned bare from an async function it would run.
 */
export interface ValuesRelation { relation: ReturnType<Tx> }

/**
 * The per-entity values of `metric` (entity, variant, value, denom, step): materialised as the
 * temporary table `exp_values` when `materialize` (winsorization updates it), else returned as a
 * subquery the aggregate reads once, which saves writing a row per exposed entity. @throws ApiError 400 for a metric that cannot be computed.
 */
export async function materializeValues(tx: Tx, s: ValueSpec, metric: Obj, materialize: boolean): Promise<ValuesRelation> {
  const w = windowSeconds(metric);
  const create = async (select: ReturnType<Tx>): Promise<ValuesRelation> => {
    if (!materialize) return { relation: tx`(${select})` };
    await tx`CREATE TEMP TABLE exp_values ON COMMIT DROP AS ${select}`;
    return { relation: tx`exp_values` };
  };
  switch (metric.metric_type) {
    case 'mean': {
      const days = s.cupedLookbackDays;
      if (days === null && s.groupIndex === null && !s.merges && isJsonObject(metric.source) && readableFromPersonTimes(metric.source) && countedMath(metric.source)) {
        // A count of one event: ingestion's per-person event times answer it (summary-count.ts).
        const summary = await summaryCount(tx, s.projectId, metric.source, { ...sourceBounds(s, w), w });
        if (summary) return create(summary.select);
      }
      return create(tx`SELECT x.entity, x.variant, COALESCE(v.value, 0)::float8 AS value, 1::float8 AS denom, 0 AS step,
          ${days === null ? tx`0::float8` : tx`COALESCE(c.value, 0)::float8`} AS cov
        FROM exp_exposed x LEFT JOIN (${sourceValues(tx, s, metric.source, 'metric__source', w)}) v ON v.entity = x.entity
          ${days === null ? tx`` : tx`LEFT JOIN (${covariateValues(tx, s, metric.source, days)}) c ON c.entity = x.entity`}`);
    }
    case 'ratio': {
      return create(tx`SELECT x.entity, x.variant, COALESCE(a.value, 0)::float8 AS value, COALESCE(b.value, 0)::float8 AS denom, 0 AS step, 0::float8 AS cov
        FROM exp_exposed x LEFT JOIN (${sourceValues(tx, s, metric.numerator, 'metric__numerator', w)}) a ON a.entity = x.entity
          LEFT JOIN (${sourceValues(tx, s, metric.denominator, 'metric__denominator', w)}) b ON b.entity = x.entity`);
    }
    case 'funnel': {
      const steps = Array.isArray(metric.series) ? metric.series : [];
      const fw = w > 0 ? w : DEFAULT_FUNNEL_WINDOW_SECONDS;
      // Step events lie in [start, end], or [start, end + W] with a conversion window (PostHog:
      // without one, events after the end date do not count).
      const until = w > 0 ? earlier(new Date(s.end.getTime() + w * 1000), s.span.maxFirst && new Date(s.span.maxFirst.getTime() + w * 1000)) : s.end;
      const stepsFrom = later(s.start, s.span.minFirst);
      const k = steps.length;
      const ordered = metric.funnel_order_type !== 'unordered';
      const probe = (source: unknown) => isJsonObject(source) && source.kind === 'EventsNode' && typeof source.event === 'string';
      if (s.groupIndex === null && !s.merges && steps.every(probe)) {
        const window = { ordered, fw, from: stepsFrom, until };
        // Plain event steps read ingestion's per-person event times (summary-funnel.ts; person-times.ts says which).
        const summary = steps.every((step) => readableFromPersonTimes(step as Obj)) ? await summaryFunnel(tx, s.projectId, steps as Obj[], window) : null;
        return create((summary ?? await probedFunnel(tx, s, steps as Obj[], window)).select);
      }
      // Otherwise one pass per step over that step's events joined to the entities still in the
      // funnel: ordered, the earliest step-i event at/after step i − 1 (earliest is optimal for
      // reaching every later step); unordered, any step event after the exposure. All within W of
      // the first exposure.
      for (let step = 1; step <= k; step++) {
        const source = steps[step - 1];
        const attr = `metric__series__${step - 1}`;
        const prev = ordered && step > 1 ? tx`${tx(`exp_f${step - 1}`)}` : tx`exp_exposed`;
        const from = ordered && step > 1 ? afterStep(tx, tx`p.t`, steps as Obj[], step) : tx`p.first_exposure`;
        const events = sourceEvents(tx, s, source, attr, until, true, stepsFrom);
        await tx`CREATE TEMP TABLE ${tx(`exp_f${step}`)} ON COMMIT DROP AS
          SELECT p.entity, p.first_exposure, min(e.ts) AS t
          FROM ${prev} p JOIN (${events}) e ON e.entity = p.entity AND e.ts >= ${from} AND e.ts <= p.first_exposure + make_interval(secs => ${fw})
          GROUP BY p.entity, p.first_exposure`;
      }
      let joins = tx``;
      let reached = tx`0`;
      for (let step = 1; step <= k; step++) {
        joins = tx`${joins} LEFT JOIN ${tx(`exp_f${step}`)} ${tx(`f${step}`)} ON ${tx(`f${step}`)}.entity = x.entity`;
        reached = ordered
          ? tx`CASE WHEN ${tx(`f${step}`)}.entity IS NOT NULL THEN ${step} ELSE ${reached} END`
          : tx`${reached} + (CASE WHEN ${tx(`f${step}`)}.entity IS NOT NULL THEN 1 ELSE 0 END)`;
      }
      return create(tx`SELECT entity, variant, (CASE WHEN reached = ${k} THEN 1 ELSE 0 END)::float8 AS value,
        1::float8 AS denom, reached AS step, 0::float8 AS cov FROM (SELECT x.entity, x.variant, ${reached} AS reached FROM exp_exposed x ${joins}) f`);
    }
    case 'retention': {
      await stepEvents(tx, s, [metric.start_event, metric.completion_event], 'metric__retention', Math.max(w, DEFAULT_FUNNEL_WINDOW_SECONDS));
      const unit = metric.retention_window_unit === 'hour' ? 'hour' : 'day';
      const from = Number(metric.retention_window_start ?? 0);
      const to = Number(metric.retention_window_end ?? from);
      if (!Number.isInteger(from) || !Number.isInteger(to) || to < from) throw errors.validation('retention_window_start and retention_window_end must be integers, start ≤ end.', 'metric');
      const pick = metric.start_handling === 'last_seen' ? tx`max(ts)` : tx`min(ts)`;
      return create(tx`SELECT x.entity, x.variant,
          (CASE WHEN EXISTS (SELECT 1 FROM exp_steps c WHERE c.entity = x.entity AND c.k = 2 AND c.ts > st.start_ts
            AND date_trunc(${unit}, c.ts AT TIME ZONE ${s.timezone})
              BETWEEN date_trunc(${unit}, st.start_ts AT TIME ZONE ${s.timezone}) + make_interval(${unit === 'hour' ? tx`hours` : tx`days`} => ${from})
                  AND date_trunc(${unit}, st.start_ts AT TIME ZONE ${s.timezone}) + make_interval(${unit === 'hour' ? tx`hours` : tx`days`} => ${to}))
          THEN 1 ELSE 0 END)::float8 AS value, 1::float8 AS denom, 0 AS step, 0::float8 AS cov
        FROM exp_exposed x JOIN (SELECT e.entity, ${pick} AS start_ts FROM exp_steps e JOIN exp_exposed f ON f.entity = e.entity
            WHERE e.k = 1 AND e.ts <= ${s.end} ${w > 0 ? tx`AND e.ts <= f.first_exposure + make_interval(secs => ${w})` : tx``} GROUP BY e.entity
          ${s.maturedBy && to > 0 ? tx`HAVING ${pick} + make_interval(${unit === 'hour' ? tx`hours` : tx`days`} => ${to}) <= ${s.maturedBy}` : tx``}) st ON st.entity = x.entity`);
    }
    default:
      throw errors.validation(`metric_type "${String(metric.metric_type)}" cannot be computed.`, 'metric__metric_type');
  }
}

/**
 * The per-person funnel values by index probes (persons without merges, every step an event
 * name; used where summary-funnel.ts cannot answer: steps with property filters or on
 * `$feature_flag_called`, windows before 2020): per exposed person and step, probes of
 * `events_project_person_event_time` in each month partition that can hold the step, chained
 * in one statement so a person's steps are looked up back to back (their entries share leaf
 * pages) and nothing is written between steps.
 *
 * - A step whose time the next step needs (ordered, not the last) takes the earliest event
 *   at/after the previous step: the months are probed oldest first and the first hit wins.
 * - A step that only has to exist (the last ordered step; every unordered step, at/after the
 *   exposure) takes the latest event in its window: the months are probed newest first, where
 *   most of a person's later events are, so usually one probe answers.
 * Each month is probed as its own table (COALESCE of scalar subqueries, each fenced with
 * OFFSET 0 so the planner does not inline and repeat them): probing the partitioned parent
 * re-runs partition pruning per probe and always starts at the oldest month.
 * Measured (bench/experiments.ts workload, one half of 500,000 persons, two months): 5.35 s
 * through the parent, 4.4–4.9 s probing the months.
 */
async function probedFunnel(tx: Tx, s: ValueSpec, steps: Obj[], o: { ordered: boolean; fw: number; from: Date; until: Date }): Promise<{ select: ReturnType<Tx> }> {
  const months = await eventPartitionsBetween(tx, o.from, o.until);
  const tables = months.length > 0 ? months : ['events'];
  const k = steps.length;
  let rel = tx`SELECT x.entity, x.variant, x.first_exposure FROM exp_exposed x`;
  let reached = tx`0`;
  for (let step = 1; step <= k; step++) {
    const source = steps[step - 1]!;
    const chained = o.ordered && step > 1;
    const exists = !o.ordered || step === k;
    const after = chained ? afterStep(tx, tx`y.${tx(`t${step - 1}`)}`, steps, step) : tx`y.first_exposure`;
    const probes = (exists ? [...tables].reverse() : tables).map((table) => tx`(SELECT e.timestamp FROM ${tx(table)} e
        WHERE e.project_id = ${s.projectId} AND e.person_id = y.entity AND e.event = ${source.event as string}
          AND e.timestamp >= ${after} AND e.timestamp >= ${o.from} AND e.timestamp <= ${o.until}
          AND e.timestamp <= y.first_exposure + make_interval(secs => ${o.fw})
          AND ${eventFiltersSql(tx, source.properties, `metric__series__${step - 1}__properties`)}
        ORDER BY e.timestamp ${exists ? tx`DESC` : tx`ASC`} LIMIT 1)`);
    const joined = probes.slice(1).reduce((all, p) => tx`${all}, ${p}`, probes[0]!);
    const t = probes.length > 1 ? tx`COALESCE(${joined})` : joined;
    rel = tx`SELECT y.*, ${chained ? tx`CASE WHEN ${after} IS NOT NULL THEN ${t} END` : t} AS ${tx(`t${step}`)} FROM (${rel} OFFSET 0) y`;
    const hit = tx`f.${tx(`t${step}`)} IS NOT NULL`;
    reached = o.ordered ? tx`CASE WHEN ${hit} THEN ${step} ELSE ${reached} END` : tx`${reached} + (CASE WHEN ${hit} THEN 1 ELSE 0 END)`;
  }
  // Wrapped: a SQL fragment is a thenable, and returned bare from an async function it would run.
  return {
    select: tx`SELECT entity, variant, (CASE WHEN reached = ${k} THEN 1 ELSE 0 END)::float8 AS value,
      1::float8 AS denom, reached AS step, 0::float8 AS cov FROM (SELECT f.entity, f.variant, ${reached} AS reached FROM (${rel} OFFSET 0) f) r`,
  };
}

/** Clamps `exp_values.value` to PostHog's winsorization bounds (pooled over every variant). */
export async function winsorize(tx: Tx, lower: number | null, upper: number | null, ignoreZeros: boolean): Promise<void> {
  const bound = async (p: number, where: ReturnType<Tx>) => {
    const [{ n }] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM exp_values WHERE ${where}`;
    if (!n) return null;
    const index = Math.min(Math.floor(p * n), n - 1); // quantileExact: sorted[floor(p·N)], not percentile_disc
    const [row] = await tx<{ value: number }[]>`SELECT value FROM exp_values WHERE ${where} ORDER BY value OFFSET ${index} LIMIT 1`;
    return row?.value ?? null;
  };
  const lo = lower === null ? null : await bound(lower, tx`TRUE`);
  const hi = upper === null ? null : await bound(upper, ignoreZeros ? tx`value <> 0` : tx`TRUE`);
  if (lo !== null) await tx`UPDATE exp_values SET value = ${lo} WHERE value < ${lo}`;
  if (hi !== null) await tx`UPDATE exp_values SET value = ${hi} WHERE value > ${hi}`;
}
