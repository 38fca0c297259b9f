/**
 * Reading ingestion's per-person event times (`person_event_times`, migration 0017) for the
 * exposed persons of an analysis (`exp_exposed`): the months a window needs, one LEFT JOIN per
 * (event, month) in person order, and the plan settings that keep those joins merge joins.
 * Used by summary-funnel.ts and summary-count.ts.
 *
 * Each joined row gives, for one person, event and month: the first and last time (`f`, `l`;
 * NULL when the person has no row), the count (`n`) and the sorted times (`ts`, NULL past 64
 * events). Column names are `<letter><source index>_<month index>`, read back with {@link PersonTimes.col}.
 */
import type { PendingQuery } from 'postgres';
import type { Tx } from '../../db/connect.js';
import { eventPartitionsBetween, monthOfPartition } from '../../ingestion/event-partitions.js';
import { FEATURE_FLAG_CALLED } from '../../ingestion/flag-usage.js';
import { filtersNothing } from '../../events/property-filters.js';

/** A SQL fragment to interpolate. */
export type Fragment = PendingQuery<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One month of the window: its events partition (for fallback probes) and its first instant. */
export interface WindowMonth { table: string; month: Date }

/** The joined rows of some events over some months, and how to name their columns. */
export interface PersonTimes {
  /** `, <col> AS <name>, …` for a SELECT list over `exp_exposed x` and the joins. */
  columns: Fragment;
  /** The LEFT JOINs to append after `FROM exp_exposed x`. */
  joins: Fragment;
  /** Column `letter` (f, l, n, ts) of source `i`, month `j`, read from the alias `y`; `f` is NULL when the person has no row. */
  col(letter: 'f' | 'l' | 'n' | 'ts', i: number, j: number): Fragment;
}

/**
 * Whether `person_event_times` can stand for the events of a step or source: one named event
 * (not `$feature_flag_called`, which it leaves out) and no property filter.
 */
export function readableFromPersonTimes(source: Record<string, unknown>): boolean {
  return source.kind === 'EventsNode' && typeof source.event === 'string' && source.event !== FEATURE_FLAG_CALLED && filtersNothing(source.properties);
}

/**
 * The months `[from, to]` touches, oldest first; null when it reaches `events_old` (before 2020:
 * one partition of many months, which the pre-aggregate does not split the same way).
 */
export async function windowMonths(tx: Tx, from: Date, to: Date): Promise<WindowMonth[] | null> {
  const months = (await eventPartitionsBetween(tx, from, to)).map((table) => ({ table, month: monthOfPartition(table) }));
  if (months.some((m) => m.month === null)) return null;
  return months as WindowMonth[];
}

/** The LEFT JOINs of `events[i]` × `months[j]` rows to `exp_exposed x` (module doc). */
export function joinPersonTimes(tx: Tx, projectId: number, events: readonly string[], months: readonly WindowMonth[]): PersonTimes {
  let columns = tx``;
  let joins = tx``;
  events.forEach((event, i) => months.forEach(({ month }, j) => {
    const m = tx(`m${i}_${j}`);
    columns = tx`${columns}, ${m}.first_ts AS ${tx(`f${i}_${j}`)}, ${m}.last_ts AS ${tx(`l${i}_${j}`)}, ${m}.n AS ${tx(`n${i}_${j}`)}, ${m}.times AS ${tx(`ts${i}_${j}`)}`;
    joins = tx`${joins} LEFT JOIN person_event_times ${m} ON ${m}.project_id = ${projectId} AND ${m}.event = ${event}
      AND ${m}.month = ${month}::timestamptz AND ${m}.person_id = x.entity`;
  }));
  return { columns, joins, col: (letter, i, j) => tx`y.${tx(`${letter}${i}_${j}`)}` };
}

/** `at` minus one microsecond (timestamps are µs): an exclusive bound as an inclusive one. */
export function microsecondBefore(tx: Tx, at: Fragment): Fragment {
  return tx`(${at} - interval '1 microsecond')`;
}

/** How many of the sorted `times` are before `at` (a binary search: `width_bucket`). */
export function timesBefore(tx: Tx, at: Fragment, times: Fragment): Fragment {
  return tx`width_bucket(${microsecondBefore(tx, at)}, ${times})`;
}

/** How many of the sorted `times` are at or before `at` (a binary search: `width_bucket`). */
export function timesUpTo(tx: Tx, at: Fragment, times: Fragment): Fragment {
  return tx`width_bucket(${at}, ${times})`;
}

/**
 * Sets, for the rest of the analysis transaction, what keeps the joins merge joins in person
 * order: no hash joins (the planner's estimates favour them, and 500,000-row hash tables with the
 * times in them were minutes where the merge joins are a second), no materialised inner sides (a
 * month's partition filled since its last ANALYZE is estimated at a row or so for the (project,
 * event, month) range, and the planner then materialised that whole range and looped over the
 * exposed persons comparing each with all of it: 29 million comparisons for 1,500 persons and
 * 20,000 rows; nested loops that probe the index per person stay allowed, and are what a small
 * experiment in a large project gets) and 64 MB of work memory (the sort of the exposed persons in
 * memory, not on disk). The transaction's remaining statement is the aggregate over the values.
 */
export async function planMergeJoins(tx: Tx): Promise<void> {
  await tx`SET LOCAL enable_hashjoin = off`;
  await tx`SET LOCAL enable_material = off`;
  await tx`SET LOCAL work_mem = '64MB'`;
}
