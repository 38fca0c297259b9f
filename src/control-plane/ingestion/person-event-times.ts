/**
 * The per-person pre-aggregate of event times (table `person_event_times`,
 * migration 0017), kept in the same statement that inserts a batch's events: for each event
 * actually inserted (a redelivered one is not counted twice) with a person, the row (project,
 * event, UTC month, person) counts it, widens [first_ts, last_ts], and merges its timestamp into
 * the sorted `times` while the row holds at most {@link MAX_KEPT_TIMES} events (NULL after).
 * Events arriving in time order (live capture) append; only a late one re-sorts the row.
 * `$feature_flag_called` is left out: it is most of SDK traffic, experiment_exposures already
 * pre-aggregates it, and a funnel step on it is answered by probing the events instead.
 * Experiment funnels read these rows instead of probing the events index per person and step
 * (experiments/results/metric-values.ts `summaryFunnel`).
 */
import type { PendingQuery } from 'postgres';
import type { Tx } from '../db/connect.js';
import { FEATURE_FLAG_CALLED } from './flag-usage.js';

/** Timestamps a row keeps; beyond, `times` is NULL and readers probe the events (migration 0017). */
export const MAX_KEPT_TIMES = 64;

/** The UTC month start of a timestamptz expression, as SQL text over `column` (the partition key's rule). */
const MONTH_OF = (column: string) => `date_trunc('month', ${column} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;

/**
 * SQL text of the `person_event_times` rows of the events in `source` (a relation with the
 * events' project_id, event, person_id and timestamp): one row per (project, event, UTC month,
 * person) with its count, first and last time, and its sorted times while at most
 * {@link MAX_KEPT_TIMES}; personless events and `$feature_flag_called` are left out (module doc).
 * `source` is trusted SQL text (a table or CTE name). Also what bench/experiments.ts loads.
 */
export const FOLDED_ROWS = (source: string) => `
  SELECT project_id, event, ${MONTH_OF('timestamp')}, person_id, count(*), min(timestamp), max(timestamp),
    CASE WHEN count(*) <= ${MAX_KEPT_TIMES} THEN array_agg(timestamp ORDER BY timestamp) END
  FROM ${source} WHERE person_id IS NOT NULL AND event <> '${FEATURE_FLAG_CALLED}'
  GROUP BY 1, 2, 3, 4`;

/**
 * `WITH ins AS (<insert>) …` that also folds the rows `insert` inserted into `person_event_times`
 * and selects how many rows `insert` inserted (one row, `inserted`): the rows themselves stay in
 * Postgres (sending and parsing them back cost the control plane more than the count it needs).
 * `insert` must be an `INSERT INTO events … RETURNING project_id, event, person_id, timestamp`.
 * Rows of one statement never meet twice in the upsert: they are grouped per key first.
 */
export function insertFoldingTimes(tx: Tx, insert: PendingQuery<any>): PendingQuery<{ inserted: number }[]> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return tx`WITH ins AS (${insert}),
    folded AS (
      INSERT INTO person_event_times AS p (project_id, event, month, person_id, n, first_ts, last_ts, times)
      ${tx.unsafe(FOLDED_ROWS('ins'))}
      ON CONFLICT (project_id, event, month, person_id) DO UPDATE SET
        n = p.n + EXCLUDED.n,
        first_ts = LEAST(p.first_ts, EXCLUDED.first_ts),
        last_ts = GREATEST(p.last_ts, EXCLUDED.last_ts),
        times = CASE WHEN p.n + EXCLUDED.n > ${MAX_KEPT_TIMES} THEN NULL
          WHEN EXCLUDED.first_ts >= p.last_ts THEN p.times || EXCLUDED.times
          ELSE ARRAY(SELECT t FROM unnest(p.times || EXCLUDED.times) t ORDER BY t) END)
    SELECT count(*)::int AS inserted FROM ins`;
}
