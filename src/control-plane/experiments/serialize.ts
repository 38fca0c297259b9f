/**
 * An experiment row → its read shape (spec/API.md §2.2, §2.4–§2.6; research
 * posthog-management-api.md §3.1), with the embedded flag summary, holdout and saved-metric
 * links loaded for a whole page in three queries.
 */
import type { Sql, Tx } from '../db/connect.js';
import { userBasic } from '../users/serialize.js';
import { getHoldout, serializeHoldout, type HoldoutRow } from './holdouts.js';
import { metricFingerprint } from './metrics.js';
import { savedMetricLinks } from './store.js';
import { experimentStatus, type ExperimentRow } from './types.js';

type Obj = Record<string, unknown>;

/** Spec §2.4: the flag as embedded in an experiment. */
interface FlagSummary {
  id: number; team_id: number; name: string; key: string; filters: Obj; deleted: boolean; active: boolean;
  ensure_experience_continuity: boolean; has_encrypted_payloads: boolean; version: number; evaluation_runtime: string; evaluation_tags: string[];
}

async function flagSummaries(h: Sql | Tx, ids: number[]): Promise<Map<number, FlagSummary>> {
  if (ids.length === 0) return new Map();
  const rows = await h<FlagSummary[]>`SELECT id::int AS id, project_id::int AS team_id, name, key, filters, deleted, active,
      COALESCE(ensure_experience_continuity, false) AS ensure_experience_continuity, has_encrypted_payloads, version, evaluation_runtime, evaluation_tags
    FROM feature_flags WHERE id = ANY(${h.array(ids)}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** The stats method an experiment's results use (PostHog's default: bayesian). */
export function statsMethod(row: Pick<ExperimentRow, 'stats_config'>): string {
  const m = row.stats_config?.method;
  return m === 'frequentist' ? 'frequentist' : 'bayesian';
}

/** Serialises rows as the API returns them. */
export async function presentExperiments(h: Sql | Tx, projectId: number, rows: ExperimentRow[]): Promise<Obj[]> {
  const flags = await flagSummaries(h, [...new Set(rows.map((r) => r.feature_flag_id))]);
  const holdouts = new Map<number, HoldoutRow>();
  for (const id of new Set(rows.map((r) => r.holdout_id).filter((x): x is number => x !== null))) {
    const row = await getHoldout(h, projectId, id);
    if (row) holdouts.set(id, row);
  }
  const links = await savedMetricLinks(h, rows.map((r) => r.id));
  return rows.map((r) => {
    const flag = flags.get(r.feature_flag_id) ?? null;
    const holdout = r.holdout_id === null ? null : holdouts.get(r.holdout_id) ?? null;
    const method = statsMethod(r);
    const saved = (links.get(r.id) ?? []).map((l) => ({
      id: l.id, experiment: l.experiment_id, saved_metric: l.saved_metric_id, metadata: l.metadata, created_at: l.created_at.toISOString(),
      query: { ...l.query, fingerprint: metricFingerprint(l.query, r.start_date, method, r.exposure_criteria, r.only_count_matured_users) }, name: l.name,
    }));
    return {
      id: r.id, name: r.name, description: r.description, start_date: r.start_date?.toISOString() ?? null, end_date: r.end_date?.toISOString() ?? null,
      feature_flag_key: flag?.key ?? null, feature_flag: flag, holdout: holdout ? serializeHoldout(holdout) : null, holdout_id: r.holdout_id,
      exposure_cohort: r.exposure_cohort_id, parameters: r.parameters, secondary_metrics: r.secondary_metrics,
      saved_metrics: saved, saved_metrics_ids: saved.map((s) => ({ id: s.saved_metric, metadata: s.metadata })),
      filters: r.filters, archived: r.archived, deleted: r.deleted, created_by: userBasic(r.created_by),
      created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(), type: r.type, exposure_criteria: r.exposure_criteria,
      metrics: r.metrics, metrics_secondary: r.metrics_secondary, stats_config: r.stats_config,
      only_count_matured_users: r.only_count_matured_users, _create_in_folder: r.create_in_folder,
      conclusion: r.conclusion, conclusion_comment: r.conclusion_comment,
      primary_metrics_ordered_uuids: r.primary_metrics_ordered_uuids, secondary_metrics_ordered_uuids: r.secondary_metrics_ordered_uuids,
      status: experimentStatus(r), user_access_level: 'editor',
    };
  });
}

/** Fields an activity entry diffs. */
export function activityRecord(r: ExperimentRow): Obj {
  return {
    name: r.name, description: r.description, start_date: r.start_date?.toISOString() ?? null, end_date: r.end_date?.toISOString() ?? null,
    holdout_id: r.holdout_id, exposure_cohort: r.exposure_cohort_id, parameters: r.parameters, filters: r.filters, archived: r.archived,
    deleted: r.deleted, exposure_criteria: r.exposure_criteria, metrics: r.metrics, metrics_secondary: r.metrics_secondary,
    stats_config: r.stats_config, only_count_matured_users: r.only_count_matured_users, conclusion: r.conclusion, conclusion_comment: r.conclusion_comment,
  };
}
