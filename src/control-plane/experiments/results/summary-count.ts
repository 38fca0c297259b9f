/**
 * Per-person values of a mean metric that counts events (`math` total, or dau: 1 when the person
 * has any) from ingestion's pre-aggregate `person_event_times` (migration 0017), for persons without merges and a source that person-times.ts `readableFromPersonTimes`
 * accepts. Same rule as metric-values.ts' mean (research/experiments.md §3.1): the source's
 * events at/after the person's first exposure and the window's start, and with a conversion
 * window W before the first exposure + W and the window's end (exclusive), else up to the end
 * (inclusive).
 *
 * How: one merge-joined row per person and month of the window (person-times.ts). A month's
 * count inside the person's bounds is its whole count when the row lies inside them, 0 when
 * it lies outside, else the difference of two binary searches of its sorted times
 * (`width_bucket`); a row that keeps no times (over 64 events that month) falls back to counting
 * that month's events of the person.
 */
import type { JsonObject } from '../../../json-shapes.js';
import type { Tx } from '../../db/connect.js';
import { type Fragment, joinPersonTimes, microsecondBefore, planMergeJoins, timesBefore, timesUpTo, windowMonths } from './person-times.js';

/** The bounds of a counted source: from `from`, up to `until` (inclusive when `w` = 0), and before the first exposure + `w` seconds when `w` > 0. */
export interface CountWindow { from: Date; until: Date; w: number }

/** Whether `source`'s math is a count this module computes (total, the default, or dau). */
export function countedMath(source: JsonObject): boolean {
  return source.math === undefined || source.math === null || source.math === 'total' || source.math === 'dau';
}

/**
 * The SELECT `(entity, variant, value, denom, step, cov)` over every exposed person (0 without
 * events), or null when the window reaches `events_old` (person-times.ts `windowMonths`).
 * Wrapped in an object: a SQL fragment is a thenable.
 */
export async function summaryCount(tx: Tx, projectId: number, source: JsonObject, o: CountWindow): Promise<{ select: Fragment } | null> {
  const months = await windowMonths(tx, o.from, o.until);
  if (months === null) return null;
  const event = source.event as string;
  const joined = joinPersonTimes(tx, projectId, [event], months);
  // [lo, hi], both inclusive (an exclusive end is the microsecond before it: timestamps are µs).
  const hi = o.w > 0
    ? microsecondBefore(tx, tx`LEAST(x.first_exposure + make_interval(secs => ${o.w}), ${o.until}::timestamptz)`)
    : tx`${o.until}::timestamptz`;
  const perMonth = months.map(({ table }, j) => {
    const [first, last, n, times] = [joined.col('f', 0, j), joined.col('l', 0, j), joined.col('n', 0, j), joined.col('ts', 0, j)];
    return tx`CASE WHEN ${first} IS NULL OR ${last} < y.lo OR ${first} > y.hi THEN 0
      WHEN ${first} >= y.lo AND ${last} <= y.hi THEN ${n}
      WHEN ${times} IS NOT NULL THEN ${timesUpTo(tx, tx`y.hi`, times)} - ${timesBefore(tx, tx`y.lo`, times)}
      ELSE (SELECT count(*) FROM ${tx(table)} e WHERE e.project_id = ${projectId} AND e.person_id = y.entity AND e.event = ${event}
        AND e.timestamp >= y.lo AND e.timestamp <= y.hi)::int END`;
  });
  const total = perMonth.slice(1).reduce((all, p) => tx`${all} + ${p}`, perMonth[0] ?? tx`0`);
  const value = source.math === 'dau' ? tx`(CASE WHEN ${total} > 0 THEN 1 ELSE 0 END)` : total;
  await planMergeJoins(tx);
  return {
    select: tx`SELECT y.entity, y.variant, (${value})::float8 AS value, 1::float8 AS denom, 0 AS step, 0::float8 AS cov
      FROM (SELECT x.entity, x.variant, GREATEST(x.first_exposure, ${o.from}::timestamptz) AS lo, ${hi} AS hi ${joined.columns}
        FROM exp_exposed x ${joined.joins} OFFSET 0) y`,
  };
}
