/**
 * Shapes of the cohorts resource (PostHog's CohortSerializer).
 */
import type { UserRow } from '../users/serialize.js';

/** A `cohorts` row with its creator. */
export interface CohortRow {
  id: number;
  project_id: number;
  name: string;
  description: string;
  filters: Record<string, unknown>;
  groups: unknown[];
  query: unknown;
  is_static: boolean;
  deleted: boolean;
  is_calculating: boolean;
  last_calculation: Date | null;
  errors_calculating: number;
  count: number | null;
  create_in_folder: string | null;
  created_by_id: number | null;
  created_by: UserRow | null;
  created_at: Date;
  /** Ids of live experiments using this cohort as their exposure cohort. */
  experiment_set: number[];
}

/** Validated fields of a create or update body. */
export interface CohortInput {
  name?: string;
  description?: string;
  filters?: Record<string, unknown>;
  groups?: unknown[];
  query?: unknown;
  is_static?: boolean;
  deleted?: boolean;
  create_in_folder?: string | null;
  /** Distinct ids from an uploaded CSV (static cohorts). */
  csvDistinctIds?: string[];
}
