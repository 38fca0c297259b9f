/**
 * Shapes of the experiments resource (spec/API.md §2.2; research/posthog-management-api.md §3.1).
 */
import type { UserRow } from '../users/serialize.js';

type Obj = Record<string, unknown>;

/** Values of `conclusion`. */
export const CONCLUSIONS = ['won', 'lost', 'inconclusive', 'stopped_early', 'invalid'] as const;
/** Values of `type`. */
export const EXPERIMENT_TYPES = ['product', 'web'] as const;
/** Lifecycle derived from the dates: draft (no start), running, stopped (end set). */
export type ExperimentStatus = 'draft' | 'running' | 'stopped';

/** An `experiments` row with its creator. */
export interface ExperimentRow {
  id: number;
  project_id: number;
  name: string;
  description: string | null;
  start_date: Date | null;
  end_date: Date | null;
  feature_flag_id: number;
  holdout_id: number | null;
  exposure_cohort_id: number | null;
  parameters: Obj | null;
  secondary_metrics: unknown[];
  filters: Obj;
  archived: boolean;
  deleted: boolean;
  type: string;
  exposure_criteria: Obj | null;
  metrics: Obj[];
  metrics_secondary: Obj[];
  stats_config: Obj | null;
  /** PostHog's experiment setting: count only users whose conversion (retention) window has elapsed. */
  only_count_matured_users: boolean;
  create_in_folder: string | null;
  conclusion: string | null;
  conclusion_comment: string | null;
  primary_metrics_ordered_uuids: string[] | null;
  secondary_metrics_ordered_uuids: string[] | null;
  created_by_id: number | null;
  created_by: UserRow | null;
  created_at: Date;
  updated_at: Date;
}

/** A saved-metric link of an experiment, with the metric's name and query. */
export interface SavedMetricLinkRow {
  id: number; experiment_id: number; saved_metric_id: number; metadata: Obj; created_at: Date; query: Obj; name: string;
}

/** Lifecycle of a row. */
export function experimentStatus(r: Pick<ExperimentRow, 'start_date' | 'end_date'>): ExperimentStatus {
  if (r.start_date === null) return 'draft';
  return r.end_date === null ? 'running' : 'stopped';
}
