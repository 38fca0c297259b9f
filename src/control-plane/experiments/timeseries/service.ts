/**
 * E8 `recalculate_timeseries` and E9 `timeseries_results` (spec/API.md §4.1; research
 * posthog-management-api.md §3.7, experiments.md §5).
 *
 * E8: body `{metric, fingerprint}` (both required; the metric's `uuid` names it). A draft cannot
 * be recalculated. When a pending or in-progress request exists for (experiment, fingerprint)
 * it is returned (200); otherwise the stored results for (experiment, metric uuid, fingerprint)
 * are deleted, a request is created and its job enqueued (201). Body `{id, experiment_id,
 * metric_uuid, fingerprint, status, created_at}`.
 *
 * E9: query `metric_uuid` and `fingerprint` (both required). Every day from the start date to
 * the end date (or today) in the project's time zone, with the stored result or null; `errors`
 * by day; `status` pending (no rows), failed (none completed, some failed), completed (every day
 * completed), else partial.
 */
import { type JsonObject, isJsonObject } from '../../../json-shapes.js';
import type { Sql } from '../../db/connect.js';
import { errors } from '../../../errors.js';
import * as store from '../store.js';
import { validateMetric } from '../metrics.js';
import type { JobQueue } from '../../jobs/queue.js';
import { enqueueRecalculation } from './queue.js';
import { RESULTS_RULES_VERSION } from '../results/rules-version.js';

type Obj = JsonObject;

interface RequestRow { id: string; experiment_id: number; metric_uuid: string; fingerprint: string; status: string; created_at: Date }

function requestBody(r: RequestRow): Obj {
  return { id: r.id, experiment_id: r.experiment_id, metric_uuid: r.metric_uuid, fingerprint: r.fingerprint, status: r.status, created_at: r.created_at.toISOString() };
}

/** Timeseries operations of one project. */
export class TimeseriesService {
  constructor(private readonly sql: Sql, private readonly queue: JobQueue | undefined) {}

  /** E8. @throws ApiError 404, 400; 503 when this control plane runs no job queue. */
  async recalculate(projectId: number, experimentId: number, body: unknown): Promise<{ status: number; body: Obj }> {
    const b = isJsonObject(body) ? body : {};
    if (b.metric === undefined || b.metric === null) throw errors.validation('metric is required', 'metric');
    if (typeof b.fingerprint !== 'string' || b.fingerprint === '') throw errors.validation('fingerprint is required', 'fingerprint');
    const given = isJsonObject(b.metric) ? b.metric.uuid : undefined;
    const metric = validateMetric(b.metric, 'metric');
    if (typeof given !== 'string') throw errors.validation('The metric needs its uuid.', 'metric__uuid');
    const experiment = await store.getExperiment(this.sql, projectId, experimentId);
    if (!experiment || experiment.deleted) throw errors.notFound();
    if (experiment.start_date === null) throw errors.validation("Cannot recalculate timeseries for experiment that hasn't started", null);
    if (!this.queue) throw errors.unavailable('jobs_unavailable', 'This control plane runs no job queue.');
    const fingerprint = b.fingerprint;
    const outcome = await this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`timeseries:${experimentId}:${fingerprint}`}))`;
      const [open] = await tx<RequestRow[]>`SELECT id, experiment_id::int AS experiment_id, metric_uuid, fingerprint, status, created_at
        FROM experiment_timeseries_recalculations
        WHERE experiment_id = ${experimentId} AND fingerprint = ${fingerprint} AND status IN ('pending', 'in_progress')
          AND rules_version = ${RESULTS_RULES_VERSION} ORDER BY created_at DESC LIMIT 1`;
      if (open) return { created: false, row: open };
      await tx`DELETE FROM experiment_timeseries_results WHERE experiment_id = ${experimentId} AND metric_uuid = ${given} AND fingerprint = ${fingerprint}`;
      const [row] = await tx<RequestRow[]>`INSERT INTO experiment_timeseries_recalculations (project_id, experiment_id, metric, metric_uuid, fingerprint, rules_version)
        VALUES (${projectId}, ${experimentId}, ${tx.json({ ...metric, uuid: given } as never)}, ${given}, ${fingerprint}, ${RESULTS_RULES_VERSION})
        RETURNING id, experiment_id::int AS experiment_id, metric_uuid, fingerprint, status, created_at`;
      return { created: true, row: row! };
    }) as { created: boolean; row: RequestRow };
    if (outcome.created) await enqueueRecalculation(this.queue, outcome.row.id);
    return { status: outcome.created ? 201 : 200, body: requestBody(outcome.row) };
  }

  /** E9. @throws ApiError 404, 400. */
  async results(projectId: number, experimentId: number, query: URLSearchParams): Promise<Obj> {
    const metricUuid = query.get('metric_uuid');
    const fingerprint = query.get('fingerprint');
    if (!metricUuid) throw errors.validation('metric_uuid query parameter is required', 'metric_uuid');
    if (!fingerprint) throw errors.validation('fingerprint query parameter is required', 'fingerprint');
    const experiment = await store.getExperiment(this.sql, projectId, experimentId);
    if (!experiment || experiment.deleted) throw errors.notFound();
    if (experiment.start_date === null) throw errors.validation('Experiment has not been started yet', null);
    const days = await this.sql<{ day: string }[]>`
      SELECT to_char(g::date, 'YYYY-MM-DD') AS day FROM projects p, generate_series(
        (${experiment.start_date} AT TIME ZONE p.timezone)::date,
        (LEAST(COALESCE(${experiment.end_date}::timestamptz, now()), now()) AT TIME ZONE p.timezone)::date, interval '1 day') g
      WHERE p.id = ${projectId} ORDER BY g`;
    const rows = await this.sql<{ day: string; status: string; result: Obj | null; error: string | null; computed_at: Date; created_at: Date; updated_at: Date }[]>`
      SELECT to_char(day, 'YYYY-MM-DD') AS day, status, result, error, computed_at, created_at, updated_at FROM experiment_timeseries_results
      WHERE experiment_id = ${experimentId} AND metric_uuid = ${metricUuid} AND fingerprint = ${fingerprint}
        AND rules_version = ${RESULTS_RULES_VERSION} ORDER BY day`;
    const [request] = await this.sql<{ status: string; created_at: Date }[]>`SELECT status, created_at FROM experiment_timeseries_recalculations
      WHERE experiment_id = ${experimentId} AND metric_uuid = ${metricUuid} AND fingerprint = ${fingerprint}
        AND rules_version = ${RESULTS_RULES_VERSION} ORDER BY created_at DESC LIMIT 1`;
    const byDay = new Map(rows.map((r) => [r.day, r]));
    const timeseries: Record<string, Obj | null> = {};
    const failed: Record<string, string> = {};
    for (const { day } of days) {
      const r = byDay.get(day);
      timeseries[day] = r?.status === 'completed' ? r.result : null;
      if (r?.status === 'failed') failed[day] = r.error ?? 'failed';
    }
    const completed = rows.filter((r) => r.status === 'completed').length;
    const status = rows.length === 0 ? 'pending' : completed === 0 && rows.some((r) => r.status === 'failed') ? 'failed'
      : days.every(({ day }) => byDay.get(day)?.status === 'completed') ? 'completed' : 'partial';
    const stamp = (pick: (r: typeof rows[number]) => Date) => (rows.length === 0 ? null : new Date(Math.max(...rows.map((r) => pick(r).getTime()))).toISOString());
    return {
      experiment_id: experimentId, metric_uuid: metricUuid, status, timeseries,
      errors: Object.keys(failed).length > 0 ? failed : null,
      computed_at: stamp((r) => r.computed_at), created_at: rows.length === 0 ? null : new Date(Math.min(...rows.map((r) => r.created_at.getTime()))).toISOString(),
      updated_at: stamp((r) => r.updated_at),
      recalculation_status: request?.status ?? null, recalculation_created_at: request?.created_at.toISOString() ?? null,
    };
  }
}
