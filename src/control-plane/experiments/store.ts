/**
 * SQL of the experiments resource: rows in, {@link ExperimentRow} out. Every function takes the
 * handle to run on (the pool for reads, the write's transaction for writes).
 */
import type { Sql, Tx } from '../db/connect.js';
import type { ExperimentRow, SavedMetricLinkRow } from './types.js';

type Handle = Sql | Tx;
type Obj = Record<string, unknown>;

function selectRows(h: Handle) {
  return h`SELECT x.*, x.id::int AS id, x.project_id::int AS project_id, x.feature_flag_id::int AS feature_flag_id,
      x.holdout_id::int AS holdout_id, x.exposure_cohort_id::int AS exposure_cohort_id, to_jsonb(u) AS created_by
    FROM experiments x LEFT JOIN users u ON u.id = x.created_by_id`;
}

/** One experiment of the project (deleted included), or null; `forUpdate` locks it. */
export async function getExperiment(h: Handle, projectId: number, id: number, forUpdate = false): Promise<ExperimentRow | null> {
  const rows = await h<ExperimentRow[]>`${selectRows(h)} WHERE x.project_id = ${projectId} AND x.id = ${id} ${forUpdate ? h`FOR UPDATE OF x` : h``}`;
  return rows[0] ?? null;
}

/** E1 filters (research §3.4). */
export interface ExperimentListQuery {
  status?: 'draft' | 'running' | 'complete' | 'paused';
  /** true → archived only; false (default) → not archived. */
  archived: boolean;
  search?: string;
  createdById?: number;
  order: { field: string; desc: boolean };
}

/** A page of live experiments matching `q`. */
export async function listExperiments(h: Handle, projectId: number, q: ExperimentListQuery, limit: number, offset: number): Promise<{ count: number; rows: ExperimentRow[] }> {
  const conds = [h`x.project_id = ${projectId}`, h`NOT x.deleted`, h`x.archived = ${q.archived}`];
  if (q.status === 'draft') conds.push(h`x.start_date IS NULL`);
  else if (q.status === 'running') conds.push(h`x.start_date IS NOT NULL AND x.end_date IS NULL`);
  else if (q.status === 'complete') conds.push(h`x.end_date IS NOT NULL`);
  else if (q.status === 'paused') {
    conds.push(h`x.start_date IS NOT NULL AND x.end_date IS NULL AND EXISTS (SELECT 1 FROM feature_flags f WHERE f.id = x.feature_flag_id AND NOT f.active)`);
  }
  if (q.search) conds.push(h`x.name ILIKE ${`%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`);
  if (q.createdById !== undefined) conds.push(h`x.created_by_id = ${q.createdById}`);
  const where = conds.reduce((a, c) => h`${a} AND ${c}`);
  const dir = q.order.desc ? h`DESC` : h`ASC`;
  const key = q.order.field === 'duration'
    ? h`(COALESCE(x.end_date, now()) - x.start_date)`
    : q.order.field === 'status'
      ? h`(CASE WHEN x.start_date IS NULL THEN 0 WHEN x.end_date IS NULL THEN 1 ELSE 2 END)`
      : q.order.field === 'created_by' ? h`x.created_by_id` : h(`x.${q.order.field}`);
  const [{ n }] = await h<{ n: number }[]>`SELECT count(*)::int AS n FROM experiments x WHERE ${where}`;
  const rows = await h<ExperimentRow[]>`${selectRows(h)} WHERE ${where} ORDER BY ${key} ${dir} NULLS LAST, x.id ${dir} LIMIT ${limit} OFFSET ${offset}`;
  return { count: n ?? 0, rows };
}

/** The columns an insert or update writes. */
export type ExperimentWrite = Omit<ExperimentRow, 'id' | 'project_id' | 'created_by_id' | 'created_by' | 'created_at' | 'updated_at'>;

const json = (h: Handle, v: unknown) => (v === null || v === undefined ? null : h.json(v as never));

/** Inserts an experiment; returns its id. */
export async function insertExperiment(tx: Tx, projectId: number, userId: number, w: ExperimentWrite): Promise<number> {
  const [row] = await tx<{ id: number }[]>`INSERT INTO experiments (project_id, created_by_id, name, description, start_date, end_date,
      feature_flag_id, holdout_id, exposure_cohort_id, parameters, secondary_metrics, filters, archived, deleted, type, exposure_criteria,
      metrics, metrics_secondary, stats_config, only_count_matured_users, create_in_folder, conclusion, conclusion_comment,
      primary_metrics_ordered_uuids, secondary_metrics_ordered_uuids)
    VALUES (${projectId}, ${userId}, ${w.name}, ${w.description}, ${w.start_date}, ${w.end_date}, ${w.feature_flag_id}, ${w.holdout_id},
      ${w.exposure_cohort_id}, ${json(tx, w.parameters)}, ${tx.json(w.secondary_metrics as never)}, ${tx.json(w.filters as never)}, ${w.archived},
      ${w.deleted}, ${w.type}, ${json(tx, w.exposure_criteria)}, ${tx.json(w.metrics as never)}, ${tx.json(w.metrics_secondary as never)},
      ${json(tx, w.stats_config)}, ${w.only_count_matured_users}, ${w.create_in_folder}, ${w.conclusion}, ${w.conclusion_comment},
      ${json(tx, w.primary_metrics_ordered_uuids)}, ${json(tx, w.secondary_metrics_ordered_uuids)})
    RETURNING id::int AS id`;
  return row!.id;
}

/** Writes every editable column of an experiment. */
export async function updateExperiment(tx: Tx, id: number, w: ExperimentWrite): Promise<void> {
  await tx`UPDATE experiments SET name = ${w.name}, description = ${w.description}, start_date = ${w.start_date}, end_date = ${w.end_date},
    feature_flag_id = ${w.feature_flag_id}, holdout_id = ${w.holdout_id}, exposure_cohort_id = ${w.exposure_cohort_id},
    parameters = ${json(tx, w.parameters)}, secondary_metrics = ${tx.json(w.secondary_metrics as never)}, filters = ${tx.json(w.filters as never)},
    archived = ${w.archived}, deleted = ${w.deleted}, type = ${w.type}, exposure_criteria = ${json(tx, w.exposure_criteria)},
    metrics = ${tx.json(w.metrics as never)}, metrics_secondary = ${tx.json(w.metrics_secondary as never)}, stats_config = ${json(tx, w.stats_config)},
    only_count_matured_users = ${w.only_count_matured_users}, create_in_folder = ${w.create_in_folder}, conclusion = ${w.conclusion}, conclusion_comment = ${w.conclusion_comment},
    primary_metrics_ordered_uuids = ${json(tx, w.primary_metrics_ordered_uuids)},
    secondary_metrics_ordered_uuids = ${json(tx, w.secondary_metrics_ordered_uuids)}, updated_at = now()
    WHERE id = ${id}`;
}

/** Saved-metric links of the given experiments, by experiment id. */
export async function savedMetricLinks(h: Handle, experimentIds: number[]): Promise<Map<number, SavedMetricLinkRow[]>> {
  const out = new Map<number, SavedMetricLinkRow[]>();
  if (experimentIds.length === 0) return out;
  const rows = await h<SavedMetricLinkRow[]>`SELECT l.id::int AS id, l.experiment_id::int AS experiment_id, l.saved_metric_id::int AS saved_metric_id,
      l.metadata, l.created_at, m.query, m.name
    FROM experiment_to_saved_metric l JOIN experiment_saved_metrics m ON m.id = l.saved_metric_id
    WHERE l.experiment_id = ANY(${h.array(experimentIds)}::bigint[]) ORDER BY l.id`;
  for (const r of rows) {
    const list = out.get(r.experiment_id) ?? [];
    list.push(r);
    out.set(r.experiment_id, list);
  }
  return out;
}

/** Replaces an experiment's saved-metric links. */
export async function replaceSavedMetricLinks(tx: Tx, experimentId: number, links: readonly { id: number; metadata: Obj }[]): Promise<void> {
  await tx`DELETE FROM experiment_to_saved_metric WHERE experiment_id = ${experimentId}`;
  for (const l of links) {
    await tx`INSERT INTO experiment_to_saved_metric (experiment_id, saved_metric_id, metadata) VALUES (${experimentId}, ${l.id}, ${tx.json(l.metadata as never)})`;
  }
}

/** True when a live experiment of the project has exactly `name`. */
export async function nameTaken(h: Handle, projectId: number, name: string): Promise<boolean> {
  const rows = await h`SELECT 1 FROM experiments WHERE project_id = ${projectId} AND name = ${name} AND NOT deleted LIMIT 1`;
  return rows.length > 0;
}
