/**
 * A stored flag → its read shape (spec/API.md §2.3; research/posthog-management-api.md §1.1),
 * returned by list, create, retrieve and update.
 *
 * `experiment_set` lists the live experiments using the flag. Switchyard has no surveys,
 * early-access features or dashboards yet, so `surveys`, `features` are `[]` and
 * `usage_dashboard` is null (PostHog creates
 * a usage dashboard on create; Switchyard does not). Every caller holding a key with the flag's
 * scope may edit it: `can_edit` true, `user_access_level` `"editor"`.
 */
import { userBasic, type UserBasic } from '../users/serialize.js';
import { flagStatus, type FlagStatus } from './status.js';
import type { Filters, FlagRow } from './types.js';

/** The read shape of a flag. */
export interface FlagResponse {
  id: number;
  name: string;
  key: string;
  filters: Filters;
  deleted: boolean;
  active: boolean;
  created_by: UserBasic | null;
  created_at: string;
  updated_at: string;
  version: number;
  last_modified_by: UserBasic | null;
  is_simple_flag: boolean;
  rollout_percentage: number | null;
  ensure_experience_continuity: boolean | null;
  experiment_set: number[];
  surveys: unknown[];
  features: unknown[];
  rollback_conditions: unknown;
  performed_rollback: boolean | null;
  can_edit: boolean;
  tags: string[];
  evaluation_tags: string[];
  usage_dashboard: number | null;
  analytics_dashboards: number[];
  has_enriched_analytics: boolean | null;
  user_access_level: string;
  creation_context: string;
  is_remote_configuration: boolean;
  has_encrypted_payloads: boolean;
  status: FlagStatus;
  evaluation_runtime: string;
  bucketing_identifier: string | null;
  last_called_at: string | null;
  _create_in_folder: string | null;
  _should_create_usage_dashboard: boolean;
}

type Obj = Record<string, unknown>;

/**
 * Read-time normalisation (PostHog `FeatureFlag.get_filters`): filters without `groups` are
 * returned as one group holding `filters.properties` (or none) with a null rollout.
 */
export function normaliseFilters(filters: Filters | null | undefined): Filters {
  if (filters && 'groups' in filters) return filters;
  const properties = Array.isArray(filters?.properties) ? filters!.properties : [];
  return { groups: [{ properties, rollout_percentage: null }] };
}

/** Cohort ids referenced by `type: "cohort"` properties of `filters` (as numbers; malformed skipped). */
export function cohortIdsOf(filters: Filters): number[] {
  const ids = new Set<number>();
  for (const g of (Array.isArray(filters.groups) ? filters.groups : []) as Obj[]) {
    for (const p of (Array.isArray(g?.properties) ? g.properties : []) as Obj[]) {
      if (p?.type === 'cohort') {
        const id = Number(p.value);
        if (Number.isSafeInteger(id)) ids.add(id);
      }
    }
  }
  return [...ids];
}

/** Copies `filters` with `cohort_name` (or null) on every cohort property. */
function withCohortNames(filters: Filters, cohortNames: ReadonlyMap<number, string>): Filters {
  if (!Array.isArray(filters.groups)) return filters;
  let touched = false;
  const groups = (filters.groups as Obj[]).map((g) => {
    if (!g || !Array.isArray(g.properties)) return g;
    return {
      ...g,
      properties: (g.properties as Obj[]).map((p) => {
        if (p?.type !== 'cohort') return p;
        touched = true;
        return { ...p, cohort_name: cohortNames.get(Number(p.value)) ?? null };
      }),
    };
  });
  return touched ? { ...filters, groups } : filters;
}

/** PostHog's `is_simple_flag`: one group, no properties, person aggregation. */
function isSimple(filters: Filters): boolean {
  const groups = filters.groups;
  if (!Array.isArray(groups) || groups.length !== 1) return false;
  const g = groups[0] as Obj | null;
  const props = g?.properties;
  return (props === undefined || props === null || (Array.isArray(props) && props.length === 0))
    && (filters.aggregation_group_type_index ?? null) === null;
}

/**
 * Builds the response of one flag. `cohortNames` maps the cohort ids the flag references to
 * their names (missing → `cohort_name: null`); `now` fixes the clock for `status`.
 */
export function serializeFlag(row: FlagRow, cohortNames: ReadonlyMap<number, string> = new Map(), now: Date = new Date()): FlagResponse {
  const filters = withCohortNames(normaliseFilters(row.filters), cohortNames);
  const simple = isSimple(filters);
  const rollout = simple ? ((filters.groups as Obj[])[0]!.rollout_percentage as number | null | undefined) ?? null : null;
  return {
    id: row.id,
    name: row.name,
    key: row.key,
    filters,
    deleted: row.deleted,
    active: row.active,
    created_by: userBasic(row.created_by),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    version: row.version,
    last_modified_by: userBasic(row.last_modified_by),
    is_simple_flag: simple,
    rollout_percentage: rollout,
    ensure_experience_continuity: row.ensure_experience_continuity,
    experiment_set: row.experiment_set ?? [],
    surveys: [],
    features: [],
    rollback_conditions: row.rollback_conditions ?? null,
    performed_rollback: row.performed_rollback,
    can_edit: true,
    tags: row.tags,
    evaluation_tags: row.evaluation_tags,
    usage_dashboard: row.usage_dashboard,
    analytics_dashboards: row.analytics_dashboards,
    has_enriched_analytics: row.has_enriched_analytics,
    user_access_level: 'editor',
    creation_context: row.creation_context,
    is_remote_configuration: row.is_remote_configuration,
    has_encrypted_payloads: row.has_encrypted_payloads,
    status: flagStatus(row, now),
    evaluation_runtime: row.evaluation_runtime,
    bucketing_identifier: row.bucketing_identifier,
    last_called_at: row.last_called_at ? row.last_called_at.toISOString() : null,
    _create_in_folder: row.create_in_folder,
    _should_create_usage_dashboard: true,
  };
}

/**
 * The fields an activity entry diffs (research §2.1): what a write can change, without
 * bookkeeping (`version`, `updated_at`, `last_modified_by`, `last_called_at`), computed fields,
 * or the dashboard links PostHog also excludes (`usage_dashboard`, `analytics_dashboards`).
 */
export function activityRecord(row: FlagRow): Record<string, unknown> {
  return {
    name: row.name,
    key: row.key,
    filters: row.filters,
    deleted: row.deleted,
    active: row.active,
    ensure_experience_continuity: row.ensure_experience_continuity,
    rollback_conditions: row.rollback_conditions ?? null,
    performed_rollback: row.performed_rollback,
    tags: row.tags,
    evaluation_tags: row.evaluation_tags,
    has_enriched_analytics: row.has_enriched_analytics,
    creation_context: row.creation_context,
    is_remote_configuration: row.is_remote_configuration,
    has_encrypted_payloads: row.has_encrypted_payloads,
    evaluation_runtime: row.evaluation_runtime,
    bucketing_identifier: row.bucketing_identifier,
  };
}
