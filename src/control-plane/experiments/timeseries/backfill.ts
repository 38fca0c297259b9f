/**
 * One timeseries recalculation (research/experiments.md §5; PostHog `timeseries_backfill.py`):
 * for every calendar day D in the project's time zone, from the start date to the end date (or
 * today), resuming after `last_successful_date`, run the FULL experiment query as of 00:00 of
 * D + 1 (capped at the end date) and store it as the result of D — each point is cumulative over
 * `[start_date, end of D]`. A failing day is stored as failed, the request is marked failed and
 * the walk stops. Results carry the current rules version (results/rules-version.ts); a request
 * begun under another version starts again from the first day.
 */
import type { Sql } from '../../db/connect.js';
import { runExperimentQuery } from '../results/query-runner.js';
import { RESULTS_RULES_VERSION } from '../results/rules-version.js';

/** Days of a recalculation: the day and the instant its cumulative result ends. */
export async function backfillDays(sql: Sql, experimentId: number, after: string | null): Promise<{ day: string; query_to: Date }[]> {
  return sql<{ day: string; query_to: Date }[]>`
    SELECT to_char(d, 'YYYY-MM-DD') AS day,
      LEAST(((d + 1)::timestamp AT TIME ZONE p.timezone), COALESCE(x.end_date, 'infinity'::timestamptz)) AS query_to
    FROM experiments x JOIN projects p ON p.id = x.project_id,
      generate_series((x.start_date AT TIME ZONE p.timezone)::date,
        (LEAST(COALESCE(x.end_date, now()), now()) AT TIME ZONE p.timezone)::date, interval '1 day') AS g(ts),
      LATERAL (SELECT g.ts::date AS d) dd
    WHERE x.id = ${experimentId} AND x.start_date IS NOT NULL AND (${after}::date IS NULL OR d > ${after}::date)
    ORDER BY d`;
}

/** Runs recalculation `id` to the end (or its first failure). Safe to run again: it resumes. */
export async function runRecalculation(sql: Sql, id: string): Promise<void> {
  const [req] = await sql<{ id: string; project_id: number; experiment_id: number; metric: Record<string, unknown>; metric_uuid: string;
    fingerprint: string; status: string; last_successful_date: string | null }[]>`
    UPDATE experiment_timeseries_recalculations SET status = 'in_progress', updated_at = now(),
      last_successful_date = CASE WHEN rules_version = ${RESULTS_RULES_VERSION} THEN last_successful_date END,
      rules_version = ${RESULTS_RULES_VERSION}
    WHERE id = ${id} AND status IN ('pending', 'in_progress')
    RETURNING id, project_id, experiment_id, metric, metric_uuid, fingerprint, status, to_char(last_successful_date, 'YYYY-MM-DD') AS last_successful_date`;
  if (!req) return; // completed, failed or deleted meanwhile
  for (const { day, query_to } of await backfillDays(sql, req.experiment_id, req.last_successful_date)) {
    try {
      const result = await runExperimentQuery(sql, req.project_id, { kind: 'ExperimentQuery', experiment_id: req.experiment_id, metric: req.metric }, { asOf: query_to });
      await sql.begin(async (tx) => {
        await tx`INSERT INTO experiment_timeseries_results (experiment_id, metric_uuid, fingerprint, day, query_to, status, result, rules_version)
          VALUES (${req.experiment_id}, ${req.metric_uuid}, ${req.fingerprint}, ${day}, ${query_to}, 'completed', ${tx.json(result as never)}, ${RESULTS_RULES_VERSION})
          ON CONFLICT (experiment_id, metric_uuid, fingerprint, day) DO UPDATE
            SET status = 'completed', result = EXCLUDED.result, error = NULL, query_to = EXCLUDED.query_to, rules_version = EXCLUDED.rules_version,
              computed_at = now(), updated_at = now()`;
        await tx`UPDATE experiment_timeseries_recalculations SET last_successful_date = ${day}, updated_at = now() WHERE id = ${id}`;
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await sql`INSERT INTO experiment_timeseries_results (experiment_id, metric_uuid, fingerprint, day, query_to, status, error, rules_version)
        VALUES (${req.experiment_id}, ${req.metric_uuid}, ${req.fingerprint}, ${day}, ${query_to}, 'failed', ${message}, ${RESULTS_RULES_VERSION})
        ON CONFLICT (experiment_id, metric_uuid, fingerprint, day) DO UPDATE
          SET status = 'failed', error = EXCLUDED.error, rules_version = EXCLUDED.rules_version, updated_at = now()`;
      await sql`UPDATE experiment_timeseries_recalculations SET status = 'failed', error = ${message}, updated_at = now() WHERE id = ${id}`;
      return;
    }
  }
  await sql`UPDATE experiment_timeseries_recalculations SET status = 'completed', updated_at = now() WHERE id = ${id}`;
}
