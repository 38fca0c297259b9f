/**
 * The feature-flag service: rules of create, update, soft delete and restore, each in ONE
 * transaction that writes the row, its activity entry and its change-log revision
 * (STYLE.md rule 8; research/posthog-management-api.md §1.2–1.5, §2.1).
 *
 * Concurrency:
 * - An update locks the flag row (`SELECT … FOR UPDATE`) before reading it, so `version` goes up
 *   by exactly one per update and concurrent updates apply one after the other, none lost.
 * - Writes that can change the dependency graph (filters with flag references, `active`,
 *   `deleted`) first take a per-project advisory lock, so two writes can never each pass the
 *   cycle / disabled-dependency checks against a state the other is changing. It is taken
 *   before the row lock, always in that order, so the two cannot deadlock.
 * - The change-log append is the last statement (it serialises on its own lock until commit).
 *
 * Keys of soft-deleted flags are reusable: when a key becomes live (create, key change, restore)
 * any soft-deleted flag still holding it is renamed to `<key>:deleted:<id>` in the same
 * transaction (PostHog's newer behaviour, research §1.2) — the tombstone keeps its id, activity
 * and change history. Restoring a renamed flag gives back its original key, or `<key>-2`,
 * `<key>-3`, … when a live flag took it meanwhile.
 */
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import { appendChanges } from '../change-log/store.js';
import { featureFlagEntity } from '../../contract/entities.js';
import { createUsageDashboard, renameUsageDashboard } from '../dashboards/usage-dashboard.js';
import { writeActivity, readActivity, type ActivityEntry } from '../activity/store.js';
import { diffRecords, jsonEqual, updateVerb } from '../activity/diff.js';
import { validateFlagBody, type FlagLookups } from './validate.js';
import { flagDependencyIds, flagDependencyRefs } from './dependencies.js';
import { activityRecord, cohortIdsOf, normaliseFilters, serializeFlag, type FlagResponse } from './serialize.js';
import type { FlagListQuery } from './list-query.js';
import * as store from './store.js';
import type { FlagInput, FlagRow, FlagWrite } from './types.js';

/** Activity-log scope of flags (PostHog's model name). */
export const ACTIVITY_SCOPE = 'FeatureFlag';

/** Filters stored for a flag created without any: one condition set for everyone (read shape of PostHog's `{}`). */
const DEFAULT_FILTERS = Object.freeze({ groups: [{ properties: [], rollout_percentage: null }] });

/** At most this many dependent flags are named in an error (then "and N more"). */
const MAX_NAMED_DEPENDENTS = 5;

/** A page of activity entries in PostHog's page-based shape (before URLs are added). */
export interface ActivityPage { total: number; results: ActivityEntry[] }

function lookupsFor(tx: Tx, projectId: number): FlagLookups {
  return {
    keyTaken: (key, excludeId) => store.keyTaken(tx, projectId, key, excludeId),
    dashboardExists: async (id) => (await tx`SELECT 1 FROM dashboards WHERE project_id = ${projectId} AND id = ${id} AND NOT deleted`).length > 0,
    cohort: (id) => store.getCohort(tx, projectId, id),
    liveFlag: (id) => store.liveFlagForDependency(tx, projectId, id),
    groupTypeIndexes: () => store.groupTypeIndexes(tx, projectId),
  };
}

function nameFlags(flags: { id: number; key: string }[]): string {
  const names = flags.slice(0, MAX_NAMED_DEPENDENTS).map((f) => `${f.key} (ID: ${f.id})`);
  if (flags.length > MAX_NAMED_DEPENDENTS) names.push(`and ${flags.length - MAX_NAMED_DEPENDENTS} more`);
  return names.join(', ');
}

/** True when `body` may change the project's dependency graph (see module comment). */
function touchesDependencies(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  if ('active' in b || 'deleted' in b) return true;
  const f = b.filters;
  return f !== null && typeof f === 'object' && !Array.isArray(f) && flagDependencyRefs(f as Record<string, unknown>).length > 0;
}

/** Removes the read-only `cohort_name` annotations from a filters value, for comparisons. */
function stripCohortNames(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripCohortNames);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (k !== 'cohort_name') out[k] = stripCohortNames(x);
    return out;
  }
  return v;
}

/** A write field's value in the API representation (the form `original_flag` carries). */
function apiValue(field: string, v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (field === 'filters') return stripCohortNames(normaliseFilters(v as Record<string, unknown>));
  return v;
}

/** Input field name → API field name (only `_create_in_folder` differs). */
function apiField(field: string): string {
  return field === 'create_in_folder' ? '_create_in_folder' : field;
}

/**
 * PostHog's conflict rule (research §1.4): only when the client sent a `version` other than the
 * stored one AND a non-empty `original_flag`; a field conflicts when the caller changes it
 * (new ≠ original), someone else changed it too (original ≠ stored) and the new value differs
 * from the stored one.
 */
function conflictingFields(current: FlagRow, input: FlagInput): string[] {
  const original = input.original_flag;
  if (input.version === undefined || input.version === current.version || !original || Object.keys(original).length === 0) return [];
  const stored = serializeFlag(current) as unknown as Record<string, unknown>;
  const out: string[] = [];
  for (const [field, value] of Object.entries(input)) {
    if (field === 'version' || field === 'original_flag' || value === undefined) continue;
    const name = apiField(field);
    if (!(name in original)) continue;
    const next = apiValue(field, value);
    const orig = name === 'filters' ? stripCohortNames(original[name]) : original[name];
    const now = name === 'filters' ? stripCohortNames(stored[name]) : stored[name];
    if (!jsonEqual(next, orig) && !jsonEqual(orig, now) && !jsonEqual(next, now)) out.push(name);
  }
  return out;
}

/** Stored fields of `current` overlaid with `input` (PATCH semantics). */
function merge(current: FlagRow, input: FlagInput): FlagWrite {
  const pick = <K extends keyof FlagWrite>(k: K): FlagWrite[K] => (k in input && (input as Record<string, unknown>)[k] !== undefined
    ? (input as unknown as FlagWrite)[k] : current[k]);
  return {
    key: pick('key'), name: pick('name'), filters: pick('filters'), deleted: pick('deleted'), active: pick('active'),
    created_by_id: current.created_by_id, last_modified_by_id: current.last_modified_by_id, created_at: pick('created_at'),
    ensure_experience_continuity: pick('ensure_experience_continuity'), rollback_conditions: pick('rollback_conditions'),
    performed_rollback: pick('performed_rollback'), tags: pick('tags'), evaluation_tags: pick('evaluation_tags'),
    analytics_dashboards: pick('analytics_dashboards'), has_enriched_analytics: pick('has_enriched_analytics'),
    creation_context: pick('creation_context'), is_remote_configuration: pick('is_remote_configuration'),
    has_encrypted_payloads: pick('has_encrypted_payloads'), evaluation_runtime: pick('evaluation_runtime'),
    bucketing_identifier: pick('bucketing_identifier'), last_called_at: pick('last_called_at'), create_in_folder: pick('create_in_folder'),
  };
}

/** Defaults of a new flag (research §1.1) overlaid with `input`. */
function withDefaults(input: FlagInput, userId: number): FlagWrite {
  return {
    key: input.key!,
    name: input.name ?? '',
    filters: input.filters ?? structuredClone(DEFAULT_FILTERS),
    deleted: input.deleted ?? false,
    active: input.active ?? true,
    created_by_id: userId,
    last_modified_by_id: userId,
    created_at: input.created_at ?? new Date(),
    ensure_experience_continuity: input.ensure_experience_continuity ?? false,
    rollback_conditions: input.rollback_conditions ?? null,
    performed_rollback: input.performed_rollback ?? null,
    tags: input.tags ?? [],
    evaluation_tags: input.evaluation_tags ?? [],
    analytics_dashboards: input.analytics_dashboards ?? [],
    has_enriched_analytics: input.has_enriched_analytics ?? false,
    creation_context: input.creation_context ?? 'feature_flags',
    is_remote_configuration: input.is_remote_configuration ?? false,
    has_encrypted_payloads: input.has_encrypted_payloads ?? false,
    evaluation_runtime: input.evaluation_runtime ?? 'all',
    bucketing_identifier: input.bucketing_identifier ?? null,
    last_called_at: input.last_called_at ?? null,
    create_in_folder: input.create_in_folder ?? null,
  };
}

/** Original key of a flag renamed on delete (`<key>:deleted:<id>`), else its key. */
function baseKey(row: FlagRow): string {
  const suffix = `:deleted:${row.id}`;
  return row.key.endsWith(suffix) ? row.key.slice(0, -suffix.length) : row.key;
}

/** Feature-flag operations of one project (the HTTP routes call these). */
export class FeatureFlagService {
  constructor(private readonly sql: Sql) {}

  /** Serialises rows with their cohort names in one query. */
  private async present(h: Sql | Tx, projectId: number, rows: FlagRow[]): Promise<FlagResponse[]> {
    const ids = [...new Set(rows.flatMap((r) => cohortIdsOf(normaliseFilters(r.filters))))];
    const names = await store.cohortNames(h, projectId, ids);
    const now = new Date();
    return rows.map((r) => serializeFlag(r, names, now));
  }

  /** F1: a page of live flags matching `q`. */
  async list(projectId: number, q: FlagListQuery, limit: number, offset: number): Promise<{ count: number; results: FlagResponse[] }> {
    const { count, rows } = await store.listFlags(this.sql, projectId, q, limit, offset);
    return { count, results: await this.present(this.sql, projectId, rows) };
  }

  /** F3: one flag by id (soft-deleted included). @throws ApiError 404. */
  async get(projectId: number, id: number): Promise<FlagResponse> {
    const row = await store.getFlag(this.sql, projectId, id);
    if (!row) throw errors.notFound();
    return (await this.present(this.sql, projectId, [row]))[0]!;
  }

  /** Serialises flag rows as the API returns them (cohort names included). */
  presentRows(h: Sql | Tx, projectId: number, rows: FlagRow[]): Promise<FlagResponse[]> {
    return this.present(h, projectId, rows);
  }

  /** F2: validates `body`, creates the flag at version 1. @throws ApiError 400. */
  async create(projectId: number, userId: number, body: unknown): Promise<FlagResponse> {
    const row = await this.sql.begin((tx) => this.createIn(tx, projectId, userId, body));
    return (await this.present(this.sql, projectId, [row]))[0]!;
  }

  /**
   * F2 inside the caller's transaction `tx` (experiments create their flag in their own
   * transaction): row, activity entry and change-log entry. @throws ApiError 400.
   */
  async createIn(tx: Tx, projectId: number, userId: number, body: unknown): Promise<FlagRow> {
    if (touchesDependencies(body)) await store.lockDependencies(tx, projectId);
    const input = await validateFlagBody(body, { mode: 'create', current: null, lookups: lookupsFor(tx, projectId) });
    const write = withDefaults(input, userId);
    if (input.active === true) write.performed_rollback = false;
    const renamed = await this.freeKey(tx, projectId, userId, write.key, null);
    const id = await store.insertFlag(tx, projectId, userId, write);
    if (input.should_create_usage_dashboard !== false) {
      // PostHog creates the usage dashboard with the flag (research §1.1: usage_dashboard non-null).
      const dashboard = await createUsageDashboard(tx, projectId, userId, write.key);
      await tx`UPDATE feature_flags SET usage_dashboard = ${dashboard} WHERE id = ${id}`;
    }
    const created = (await store.getFlag(tx, projectId, id))!;
    await writeActivity(tx, {
      projectId, userId, activity: 'created', scope: ACTIVITY_SCOPE, itemId: String(id), name: created.key,
      changes: diffRecords(ACTIVITY_SCOPE, null, activityRecord(created)),
    });
    await appendChanges(tx, [...renamed, created].map((r) => ({
      projectId, kind: 'feature_flag' as const, entityId: String(r.id), op: 'upsert' as const, payload: featureFlagEntity(r),
    })));
    return created;
  }

  /**
   * F4: validates `body` against the locked row and applies it (PATCH semantics), bumping
   * `version` by one. Soft delete / restore are `deleted: true / false`.
   * @throws ApiError 404, 400, 409 (conflict, research §1.4).
   */
  async update(projectId: number, userId: number, id: number, body: unknown): Promise<FlagResponse> {
    const row = await this.sql.begin((tx) => this.updateIn(tx, projectId, userId, id, body));
    return (await this.present(this.sql, projectId, [row]))[0]!;
  }

  /**
   * F4 inside the caller's transaction `tx` (experiments keep their flag in step with them).
   * @throws ApiError 404, 400, 409.
   */
  async updateIn(tx: Tx, projectId: number, userId: number, id: number, body: unknown): Promise<FlagRow> {
    if (touchesDependencies(body)) await store.lockDependencies(tx, projectId);
    const current = await store.getFlag(tx, projectId, id, { forUpdate: true });
    if (!current) throw errors.notFound();
    const input = await validateFlagBody(body, { mode: 'update', current, lookups: lookupsFor(tx, projectId) });

    if (conflictingFields(current, input).length > 0) {
      const who = current.last_modified_by?.email ?? 'another user';
      throw errors.conflict(`The feature flag was updated by ${who} since you started editing it. Please refresh and try again.`);
    }

    const next = merge(current, input);
    if (input.active === true) next.performed_rollback = false;

    if (input.deleted === true) {
      const dependents = await store.dependentFlags(tx, projectId, id);
      if (dependents.length > 0) {
        throw errors.validation(`Cannot delete this feature flag because other flags depend on it: ${nameFlags(dependents)}. `
          + 'Please update or delete the dependent flags first.', null);
      }
    }
    if (input.active === false && current.active) {
      const dependents = await store.dependentFlags(tx, projectId, id);
      if (dependents.length > 0) {
        throw errors.validation(`Cannot disable this feature flag because other flags depend on it: ${nameFlags(dependents)}. `
          + 'Please update or disable the dependent flags first.', null);
      }
    }
    if (input.active === true && !current.active) {
      const missing = await store.missingFlagIds(tx, projectId, flagDependencyIds(next.filters));
      if (missing.length > 0) {
        throw errors.validation(`Cannot enable this feature flag because it depends on deleted flags (IDs: ${missing.join(', ')}). `
          + 'Please update its filters first.', 'filters');
      }
      const disabled = await store.disabledFlags(tx, projectId, flagDependencyIds(next.filters));
      if (disabled.length > 0) {
        throw errors.validation(`Cannot enable this feature flag because it depends on disabled flags: ${nameFlags(disabled)}. `
          + 'Please enable the dependency flags first.', null);
      }
    }

    const restoring = current.deleted && !next.deleted;
    if (restoring && input.key === undefined) next.key = await this.restoredKey(tx, projectId, current);
    const renamed = !next.deleted && (restoring || next.key !== current.key)
      ? await this.freeKey(tx, projectId, userId, next.key, id) : [];

    await store.updateFlag(tx, id, userId, current.version + 1, next);
    const updated = (await store.getFlag(tx, projectId, id))!;
    if (updated.key !== current.key && current.usage_dashboard !== null) {
      await renameUsageDashboard(tx, projectId, current.usage_dashboard, current.key, updated.key);
    }
    const changes = diffRecords(ACTIVITY_SCOPE, activityRecord(current), activityRecord(updated));
    if (changes.length > 0) {
      const activity = updateVerb(changes);
      await writeActivity(tx, { projectId, userId, activity, scope: ACTIVITY_SCOPE, itemId: String(id), name: updated.key, changes });
    }
    await appendChanges(tx, [...renamed, updated].map((r) => ({
      projectId, kind: 'feature_flag' as const, entityId: String(r.id), op: 'upsert' as const, payload: featureFlagEntity(r),
    })));
    return updated;
  }

  /**
   * Renames soft-deleted flags holding `key` (other than `selfId`) to `<key>:deleted:<id>` and
   * logs each rename; returns the renamed rows for the change log.
   */
  private async freeKey(tx: Tx, projectId: number, userId: number, key: string, selfId: number | null): Promise<FlagRow[]> {
    const renamed = await store.renameTombstones(tx, projectId, key, selfId);
    for (const row of renamed) {
      await writeActivity(tx, {
        projectId, userId, activity: 'updated', scope: ACTIVITY_SCOPE, itemId: String(row.id), name: row.key,
        changes: [{ type: ACTIVITY_SCOPE, action: 'changed', field: 'key', before: key, after: row.key }],
      });
    }
    return renamed;
  }

  /** Key a restored flag gets: its original key, or `<key>-2`, `<key>-3`, … when taken by a live flag. */
  private async restoredKey(tx: Tx, projectId: number, row: FlagRow): Promise<string> {
    const base = baseKey(row);
    if (!(await store.keyTaken(tx, projectId, base, row.id))) return base;
    for (let n = 2; ; n++) {
      const candidate = `${base}-${n}`;
      if (!(await store.keyTaken(tx, projectId, candidate, row.id))) return candidate;
    }
  }

  /**
   * F6 / F12: a page of activity for one flag (`id`) or for all flags of the project (`id` null).
   * Returns null when `id` names no flag of the project (the route answers 404 with no body).
   */
  async activity(projectId: number, id: number | null, page: number, limit: number): Promise<ActivityPage | null> {
    if (id !== null && !(await store.flagExists(this.sql, projectId, id))) return null;
    return readActivity(this.sql, { projectId, scope: ACTIVITY_SCOPE, itemId: id === null ? undefined : String(id), page, limit });
  }
}
