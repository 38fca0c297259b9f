/**
 * Domain types of the feature-flag resource (spec/API.md §2.3; research/posthog-management-api.md §1).
 * One row type (what the store returns), one input type (what validation produces), and the
 * enumerations PostHog accepts.
 */
import type { UserRow } from '../users/serialize.js';

/** A flag's `filters` JSON (free-form; research §1.3 describes the known keys). */
export type Filters = Record<string, unknown>;

/** `evaluation_runtime` write values (spec §2.3). */
export const EVALUATION_RUNTIMES = ['server', 'client', 'all'] as const;
/** `creation_context` values (research §1.1, newer PostHog adds `product_tours`). */
export const CREATION_CONTEXTS = ['feature_flags', 'experiments', 'surveys', 'early_access_features', 'web_experiments', 'product_tours'] as const;
/** `bucketing_identifier` values (newer PostHog; null = distinct_id). */
export const BUCKETING_IDENTIFIERS = ['distinct_id', 'device_id'] as const;

/** Max length of `key` (PostHog model `max_length=400`). */
export const KEY_MAX_LENGTH = 400;
/** Largest list value a property may carry (PostHog `MAX_PROPERTY_VALUES`). */
export const MAX_PROPERTY_VALUES = 1000;

/** A `feature_flags` row plus the embedded users, as {@link FlagStore} returns it. */
export interface FlagRow {
  /** Ids of live experiments using the flag (read with the row). */
  experiment_set?: number[];
  id: number;
  project_id: number;
  key: string;
  name: string;
  filters: Filters;
  deleted: boolean;
  active: boolean;
  version: number;
  created_by_id: number | null;
  last_modified_by_id: number | null;
  created_at: Date;
  updated_at: Date;
  ensure_experience_continuity: boolean | null;
  rollback_conditions: unknown;
  performed_rollback: boolean | null;
  tags: string[];
  evaluation_tags: string[];
  analytics_dashboards: number[];
  usage_dashboard: number | null;
  has_enriched_analytics: boolean | null;
  creation_context: string;
  is_remote_configuration: boolean;
  has_encrypted_payloads: boolean;
  evaluation_runtime: string;
  bucketing_identifier: string | null;
  last_called_at: Date | null;
  create_in_folder: string | null;
  /** Joined `users` rows (null when the user is unknown or unset). */
  created_by: UserRow | null;
  last_modified_by: UserRow | null;
}

/**
 * The validated, normalised writable fields of a create or update. A field is `undefined`
 * when the request did not send it (PATCH keeps the stored value).
 */
export interface FlagInput {
  key?: string;
  name?: string;
  filters?: Filters;
  deleted?: boolean;
  active?: boolean;
  created_at?: Date;
  ensure_experience_continuity?: boolean | null;
  rollback_conditions?: unknown;
  performed_rollback?: boolean | null;
  tags?: string[];
  evaluation_tags?: string[];
  analytics_dashboards?: number[];
  has_enriched_analytics?: boolean | null;
  creation_context?: string;
  is_remote_configuration?: boolean;
  has_encrypted_payloads?: boolean;
  evaluation_runtime?: string;
  bucketing_identifier?: string | null;
  last_called_at?: Date | null;
  create_in_folder?: string;
  /** `_should_create_usage_dashboard` (create only; default true): create the flag's usage dashboard. */
  should_create_usage_dashboard?: boolean;
  /** Conflict detection (research §1.4): the version the client edited, if sent. */
  version?: number;
  /** Conflict detection: the flag as the client last saw it (`{}` when absent). */
  original_flag?: Record<string, unknown>;
}

/** The columns an insert or update writes (everything stored that a request can set). */
export type FlagWrite = Omit<FlagRow, 'id' | 'project_id' | 'created_by' | 'last_modified_by' | 'updated_at' | 'version' | 'usage_dashboard'>;
