/**
 * The entity payloads carried by the change log and the gRPC Watch stream: one function per
 * kind turns a database row into the state an evaluation node keeps. The change-log writer
 * (a write's transaction) and the snapshot builder (gRPC Watch) both call these, so a node
 * sees the same shape whether it got the entity from a snapshot or from the tail.
 *
 * Entity ids: `String(row.id)` except group-type mappings (`<project_id>:<index>`).
 * Source of the flag shape: the local-evaluation feed's MinimalFlag (research/posthog-management-api.md §2.9).
 */

/** Every entity kind in the change log. Persons, groups and hash-key overrides arrive with capture. */
export type EntityKind =
  | 'organization'
  | 'project'
  | 'feature_flag'
  | 'cohort'
  | 'group_type_mapping'
  | 'personal_api_key'
  | 'person'
  | 'group'
  | 'hash_key_override';

/** Organization state a node needs: the monthly /flags quota (null = unlimited). */
export interface OrganizationEntity { id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }

/**
 * Project settings that shape the browser SDK's remote config (`/array/<token>/config` on nodes;
 * PostHog's team fields of the same names and meaning).
 */
export interface ProjectSettings {
  autocapture_opt_out: boolean;
  autocapture_exceptions_opt_in: boolean;
  heatmaps_opt_in: boolean;
  capture_dead_clicks: boolean;
  capture_performance_opt_in: boolean;
  /** 1 legacy property matching, 2 explicit boolean equality (evaluation/properties/operators.ts). */
  property_matching_version: number;
}

/** The boolean keys of {@link ProjectSettings}. */
export const PROJECT_BOOLEAN_SETTING_KEYS = Object.freeze([
  'autocapture_opt_out', 'autocapture_exceptions_opt_in', 'heatmaps_opt_in', 'capture_dead_clicks', 'capture_performance_opt_in',
] as const);

/** The keys of {@link ProjectSettings}: projects table columns and writable API fields. */
export const PROJECT_SETTING_KEYS: readonly (keyof ProjectSettings)[] = Object.freeze([...PROJECT_BOOLEAN_SETTING_KEYS, 'property_matching_version']);

/** Settings of a project created without any (the column defaults of migrations 0006 and 0007). */
export const DEFAULT_PROJECT_SETTINGS: Readonly<ProjectSettings> = Object.freeze({
  autocapture_opt_out: false, autocapture_exceptions_opt_in: false, heatmaps_opt_in: false, capture_dead_clicks: false, capture_performance_opt_in: false,
  property_matching_version: 1,
});

/**
 * Project state a node needs: its API key (tenancy) and its settings (remote config). `settings`
 * is absent on entities written before migration 0006: read them as the defaults. The
 * `previous_api_token` pair is present only while a key replaced by a reset is in its overlap
 * (absent on entities written before migration 0019: no previous key).
 */
export interface ProjectEntity {
  id: number; organization_id: number; name: string; api_token: string; timezone: string; settings?: ProjectSettings;
  /** The key the last reset replaced, still accepted until {@link ProjectEntity.previous_api_token_expires_at}. */
  previous_api_token?: string;
  /** When `previous_api_token` stops being accepted, in ms since the epoch (checked against the reader's clock). */
  previous_api_token_expires_at?: number;
}

/**
 * Whether `token` authenticates as `project` at `nowMs` (ms since the epoch): the current key
 * always, the key a reset replaced until its expiry (exclusive). Both tiers apply this rule:
 * nodes here, the control plane in SQL (http/auth.ts).
 */
export function projectAcceptsToken(project: ProjectEntity, token: string, nowMs: number): boolean {
  if (project.api_token === token) return true;
  return project.previous_api_token === token && typeof project.previous_api_token_expires_at === 'number' && nowMs < project.previous_api_token_expires_at;
}

/** A feature flag as evaluation needs it (MinimalFlag, plus `team_id` = project id and remote-config marker). */
export interface FeatureFlagEntity {
  id: number;
  team_id: number;
  key: string;
  name: string;
  filters: Record<string, unknown>;
  deleted: boolean;
  active: boolean;
  ensure_experience_continuity: boolean;
  version: number;
  evaluation_runtime: string;
  evaluation_tags: string[];
  bucketing_identifier: string | null;
  has_encrypted_payloads: boolean;
  is_remote_configuration: boolean;
}

/** A cohort definition (`filters.properties` is `{type, values}`). */
export interface CohortEntity { id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }

/** One group type of a project. */
export interface GroupTypeMappingEntity { project_id: number; group_type: string; group_type_index: number }

/** A personal API key as a node needs it to authorise `GET /flags/definitions` (hash only, never the value). */
export interface PersonalApiKeyEntity { id: string; organization_id: number; secure_value: string; scopes: string[]; scoped_teams: number[] }

/**
 * A person as a node needs it to evaluate with stored properties: entity id = `id` (the
 * person uuid). A person merged into another is sent as a `delete` of its uuid.
 */
export interface PersonEntity {
  id: string; project_id: number; distinct_ids: string[]; properties: Record<string, unknown>;
  /** Static cohorts the person is in (cohort_people); absent when none. */
  cohort_ids?: number[];
}

/** A group's stored properties; entity id {@link groupEntityId}. */
export interface GroupEntity { project_id: number; group_type_index: number; group_key: string; properties: Record<string, unknown> }

/** An experience-continuity hash-key override; entity id {@link hashKeyOverrideEntityId}. */
export interface HashKeyOverrideEntity { project_id: number; person_id: string; feature_flag_key: string; hash_key: string }

/** persons row (+ its distinct ids) → {@link PersonEntity}. Distinct ids are sorted for stable payloads. */
export function personEntity(row: { uuid: string; project_id: number; properties: Record<string, unknown>; cohort_ids?: readonly (number | string)[] | null },
  distinctIds: readonly string[]): PersonEntity {
  const e: PersonEntity = { id: row.uuid, project_id: row.project_id, distinct_ids: [...distinctIds].sort(), properties: row.properties };
  if (row.cohort_ids && row.cohort_ids.length > 0) e.cohort_ids = row.cohort_ids.map(Number).sort((a, b) => a - b);
  return e;
}

/** groups row → {@link GroupEntity}. */
export function groupEntity(row: GroupEntity): GroupEntity {
  return { project_id: row.project_id, group_type_index: row.group_type_index, group_key: row.group_key, properties: row.properties };
}

/** Entity id of a group: `<project_id>:<group_type_index>:<group_key>`. */
export function groupEntityId(projectId: number, groupTypeIndex: number, groupKey: string): string {
  return `${projectId}:${groupTypeIndex}:${groupKey}`;
}

/** Entity id of a hash-key override: `<project_id>:<person_uuid>:<flag_key>`. */
export function hashKeyOverrideEntityId(projectId: number, personUuid: string, flagKey: string): string {
  return `${projectId}:${personUuid}:${flagKey}`;
}

/** Row shape of `feature_flags` as selected with `SELECT *`. */
export interface FeatureFlagRow {
  id: number; project_id: number; key: string; name: string; filters: Record<string, unknown>; deleted: boolean; active: boolean;
  version: number; ensure_experience_continuity: boolean | null; evaluation_runtime: string; evaluation_tags: string[];
  bucketing_identifier: string | null; has_encrypted_payloads: boolean; is_remote_configuration: boolean;
}

/** feature_flags row → {@link FeatureFlagEntity}. */
export function featureFlagEntity(row: FeatureFlagRow): FeatureFlagEntity {
  return {
    id: row.id,
    team_id: row.project_id,
    key: row.key,
    name: row.name,
    filters: row.filters,
    deleted: row.deleted,
    active: row.active,
    ensure_experience_continuity: row.ensure_experience_continuity ?? false,
    version: row.version,
    evaluation_runtime: row.evaluation_runtime,
    evaluation_tags: row.evaluation_tags,
    bucketing_identifier: row.bucketing_identifier,
    has_encrypted_payloads: row.has_encrypted_payloads,
    is_remote_configuration: row.is_remote_configuration,
  };
}

/** A projects row as the change log reads it (settings and previous-key columns included). */
export type ProjectEntityRow = {
  id: number; organization_id: number; name: string; api_token: string; timezone: string;
  previous_api_token?: string | null; previous_api_token_expires_at?: Date | null;
} & Partial<ProjectSettings>;

/** Columns of `projects` that {@link projectEntity} reads besides the settings. */
export const PROJECT_ENTITY_COLUMNS: readonly string[] = Object.freeze([
  'id', 'organization_id', 'name', 'api_token', 'timezone', 'previous_api_token', 'previous_api_token_expires_at',
]);

/** The settings columns of a projects row (absent ones: the column defaults). */
export function projectSettings(row: Partial<ProjectSettings>): ProjectSettings {
  const out = { ...DEFAULT_PROJECT_SETTINGS };
  for (const k of PROJECT_BOOLEAN_SETTING_KEYS) out[k] = row[k] === true;
  out.property_matching_version = Number(row.property_matching_version) === 2 ? 2 : 1;
  return out;
}

/** projects row → {@link ProjectEntity} (the previous key only while the row has one). */
export function projectEntity(row: ProjectEntityRow): ProjectEntity {
  const e: ProjectEntity = { id: row.id, organization_id: row.organization_id, name: row.name, api_token: row.api_token, timezone: row.timezone, settings: projectSettings(row) };
  if (row.previous_api_token && row.previous_api_token_expires_at) {
    e.previous_api_token = row.previous_api_token;
    e.previous_api_token_expires_at = row.previous_api_token_expires_at.getTime();
  }
  return e;
}

/** cohorts row → {@link CohortEntity}. */
export function cohortEntity(row: { id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }): CohortEntity {
  return { id: row.id, project_id: row.project_id, name: row.name, filters: row.filters, is_static: row.is_static, deleted: row.deleted };
}

/** Entity id of a group-type mapping. */
export function groupTypeMappingId(projectId: number, index: number): string {
  return `${projectId}:${index}`;
}

/** group_type_mappings row → {@link GroupTypeMappingEntity} (entity id: {@link groupTypeMappingId}). */
export function groupTypeMappingEntity(row: { project_id: number; group_type: string; group_type_index: number }): GroupTypeMappingEntity {
  return { project_id: row.project_id, group_type: row.group_type, group_type_index: row.group_type_index };
}
