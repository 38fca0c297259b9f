/**
 * SQL of the feature-flag resource: rows in, domain types out (STYLE.md "Typed stores"). Every
 * function takes the handle to run on — the pool for reads, the write's transaction for writes
 * and for the lookups validation makes while writing. Driver errors that mean something to the
 * client (a unique violation on the live-key index) are translated here.
 */
import type { Handle, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import type { CohortInfo } from './validate-filters.js';
import type { DependencyFlag } from './dependencies.js';
import type { FlagListQuery } from './list-query.js';
import { STALE_DAYS } from './status.js';
import type { FlagRow, FlagWrite } from './types.js';

/** Name of the partial unique index on live keys (migration 0001). */
const LIVE_KEY_INDEX = 'feature_flags_live_key';

/** Translates a unique violation on the live-key index into PostHog's `unique` key error. */
function translate(e: unknown): never {
  const err = e as { code?: string; constraint_name?: string };
  if (err?.code === '23505' && err.constraint_name === LIVE_KEY_INDEX) {
    throw errors.validation('There is already a feature flag with this key.', 'key', 'unique');
  }
  throw e;
}

/** Columns of a flag row plus its two embedded users. `f` is `feature_flags`. */
function selectRows(h: Handle) {
  return h`SELECT f.*, to_jsonb(cu) AS created_by, to_jsonb(mu) AS last_modified_by,
      ARRAY(SELECT e.id::int FROM experiments e WHERE e.feature_flag_id = f.id AND NOT e.deleted ORDER BY e.id) AS experiment_set
    FROM feature_flags f
    LEFT JOIN users cu ON cu.id = f.created_by_id
    LEFT JOIN users mu ON mu.id = f.last_modified_by_id`;
}

/** One flag of the project by id (soft-deleted included), or null. `forUpdate` locks the row. */
export async function getFlag(h: Handle, projectId: number, id: number, opts: { forUpdate?: boolean } = {}): Promise<FlagRow | null> {
  const rows = await h<FlagRow[]>`${selectRows(h)} WHERE f.project_id = ${projectId} AND f.id = ${id}
    ${opts.forUpdate ? h`FOR UPDATE OF f` : h``}`;
  return rows[0] ?? null;
}

/** True when a flag with `id` exists in the project (soft-deleted included). */
export async function flagExists(h: Handle, projectId: number, id: number): Promise<boolean> {
  const rows = await h`SELECT 1 FROM feature_flags WHERE project_id = ${projectId} AND id = ${id}`;
  return rows.length > 0;
}

/** True when a live flag of the project other than `excludeId` has `key`. */
export async function keyTaken(h: Handle, projectId: number, key: string, excludeId: number | null): Promise<boolean> {
  const rows = await h`SELECT 1 FROM feature_flags
    WHERE project_id = ${projectId} AND key = ${key} AND NOT deleted AND (${excludeId}::bigint IS NULL OR id <> ${excludeId})`;
  return rows.length > 0;
}

/** A live flag of the project as the dependency checks need it, or null. */
export async function liveFlagForDependency(h: Handle, projectId: number, id: number): Promise<DependencyFlag | null> {
  const rows = await h<DependencyFlag[]>`SELECT id, key, active, filters FROM feature_flags
    WHERE project_id = ${projectId} AND id = ${id} AND NOT deleted`;
  return rows[0] ?? null;
}

/** A cohort of the project (deleted included, as PostHog's check), or null. */
export async function getCohort(h: Handle, projectId: number, id: number): Promise<CohortInfo | null> {
  const rows = await h<CohortInfo[]>`SELECT id, name, filters FROM cohorts WHERE project_id = ${projectId} AND id = ${id}`;
  return rows[0] ?? null;
}

/** Names of the given cohorts of the project, by id. */
export async function cohortNames(h: Handle, projectId: number, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await h<{ id: number; name: string }[]>`SELECT id, name FROM cohorts
    WHERE project_id = ${projectId} AND id = ANY(${h.array(ids)}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r.name]));
}

/**
 * Live, active flags of the project (other than `id`) whose conditions reference flag `id`,
 * ordered by key (PostHog `find_dependent_flags`).
 */
export async function dependentFlags(h: Handle, projectId: number, id: number): Promise<{ id: number; key: string }[]> {
  return h<{ id: number; key: string }[]>`SELECT id, key FROM feature_flags f
    WHERE f.project_id = ${projectId} AND NOT f.deleted AND f.active AND f.id <> ${id}
      AND EXISTS (
        SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(f.filters->'groups') = 'array' THEN f.filters->'groups' ELSE '[]'::jsonb END) g
        CROSS JOIN jsonb_array_elements(CASE WHEN jsonb_typeof(g->'properties') = 'array' THEN g->'properties' ELSE '[]'::jsonb END) p
        WHERE p->>'type' = 'flag' AND trim(p->>'key') = ${String(id)})
    ORDER BY key`;
}

/** Live but disabled flags of the project among `ids`, ordered by key. */
export async function disabledFlags(h: Handle, projectId: number, ids: number[]): Promise<{ id: number; key: string }[]> {
  if (ids.length === 0) return [];
  return h<{ id: number; key: string }[]>`SELECT id, key FROM feature_flags
    WHERE project_id = ${projectId} AND id = ANY(${h.array(ids)}::bigint[]) AND NOT deleted AND NOT active ORDER BY key`;
}

/**
 * Of `ids`, those that are not a live flag of the project (soft-deleted, or never existed), in
 * ascending order (a flag may not be re-enabled over a deleted dependency).
 */
export async function missingFlagIds(h: Handle, projectId: number, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const live = new Set((await h<{ id: number }[]>`SELECT id FROM feature_flags
    WHERE project_id = ${projectId} AND id = ANY(${h.array(ids)}::bigint[]) AND NOT deleted`).map((r) => Number(r.id)));
  return [...new Set(ids)].filter((id) => !live.has(id)).sort((a, b) => a - b);
}

/**
 * Renames every soft-deleted flag of the project holding `key` (other than `selfId`) to
 * `<key>:deleted:<id>`, freeing the key for a live flag while keeping the row, its id and its
 * history. Locks and returns the renamed rows.
 */
export async function renameTombstones(tx: Tx, projectId: number, key: string, selfId: number | null): Promise<FlagRow[]> {
  const ids = await tx<{ id: number }[]>`UPDATE feature_flags SET key = key || ':deleted:' || id::text, updated_at = now()
    WHERE project_id = ${projectId} AND key = ${key} AND deleted AND (${selfId}::bigint IS NULL OR id <> ${selfId})
    RETURNING id`;
  const out: FlagRow[] = [];
  for (const { id } of ids) out.push((await getFlag(tx, projectId, id))!);
  return out;
}

/** The group type indexes of a project (group_type_mappings). */
export async function groupTypeIndexes(h: Handle, projectId: number): Promise<Set<number>> {
  const rows = await h<{ i: number }[]>`SELECT group_type_index::int AS i FROM group_type_mappings WHERE project_id = ${projectId}`;
  return new Set(rows.map((r) => r.i));
}

/** Inserts a flag (version 1) and returns its id. @throws ApiError `unique` on a live-key clash. */
export async function insertFlag(tx: Tx, projectId: number, userId: number, w: FlagWrite): Promise<number> {
  try {
    const [row] = await tx<{ id: number }[]>`INSERT INTO feature_flags (
        project_id, key, name, filters, deleted, active, version, created_by_id, last_modified_by_id, created_at, updated_at,
        ensure_experience_continuity, rollback_conditions, performed_rollback, tags, evaluation_tags, analytics_dashboards,
        has_enriched_analytics, creation_context, is_remote_configuration, has_encrypted_payloads, evaluation_runtime,
        bucketing_identifier, last_called_at, create_in_folder)
      VALUES (
        ${projectId}, ${w.key}, ${w.name}, ${tx.json(w.filters as never)}, ${w.deleted}, ${w.active}, 1, ${userId}, ${userId},
        ${w.created_at}, greatest(now(), ${w.created_at}::timestamptz), -- never before created_at (set by the service, or by the client)
        ${w.ensure_experience_continuity}, ${w.rollback_conditions === null || w.rollback_conditions === undefined ? null : tx.json(w.rollback_conditions as never)},
        ${w.performed_rollback}, ${tx.array(w.tags)}::text[], ${tx.array(w.evaluation_tags)}::text[], ${tx.array(w.analytics_dashboards)}::bigint[],
        ${w.has_enriched_analytics}, ${w.creation_context}, ${w.is_remote_configuration}, ${w.has_encrypted_payloads}, ${w.evaluation_runtime},
        ${w.bucketing_identifier}, ${w.last_called_at}, ${w.create_in_folder})
      RETURNING id`;
    return row!.id;
  } catch (e) {
    translate(e);
  }
}

/** Writes every stored field of flag `id`, sets `version`, `last_modified_by_id` and `updated_at`. */
export async function updateFlag(tx: Tx, id: number, userId: number, version: number, w: FlagWrite): Promise<void> {
  try {
    await tx`UPDATE feature_flags SET
        key = ${w.key}, name = ${w.name}, filters = ${tx.json(w.filters as never)}, deleted = ${w.deleted}, active = ${w.active},
        version = ${version}, last_modified_by_id = ${userId}, created_at = ${w.created_at}, updated_at = now(),
        ensure_experience_continuity = ${w.ensure_experience_continuity},
        rollback_conditions = ${w.rollback_conditions === null || w.rollback_conditions === undefined ? null : tx.json(w.rollback_conditions as never)},
        performed_rollback = ${w.performed_rollback}, tags = ${tx.array(w.tags)}::text[], evaluation_tags = ${tx.array(w.evaluation_tags)}::text[],
        analytics_dashboards = ${tx.array(w.analytics_dashboards)}::bigint[], has_enriched_analytics = ${w.has_enriched_analytics},
        creation_context = ${w.creation_context}, is_remote_configuration = ${w.is_remote_configuration},
        has_encrypted_payloads = ${w.has_encrypted_payloads}, evaluation_runtime = ${w.evaluation_runtime},
        bucketing_identifier = ${w.bucketing_identifier}, last_called_at = ${w.last_called_at}, create_in_folder = ${w.create_in_folder}
      WHERE id = ${id}`;
  } catch (e) {
    translate(e);
  }
}

/** SQL (over alias `f`) for "every user gets the same value": the twin of status.ts `isFullyRolledOut`. */
function fullyRolledOutSql(h: Handle) {
  const groups = h`jsonb_array_elements(CASE WHEN jsonb_typeof(f.filters->'groups') = 'array' THEN f.filters->'groups' ELSE '[]'::jsonb END)`;
  const fullGroup = h`(COALESCE(g->'rollout_percentage', 'null'::jsonb) IN ('100'::jsonb, 'null'::jsonb)
      AND COALESCE(g->'properties', 'null'::jsonb) IN ('[]'::jsonb, 'null'::jsonb))`;
  const multivariate = h`(COALESCE(f.filters->'multivariate', 'null'::jsonb) NOT IN ('null'::jsonb, '{}'::jsonb, 'false'::jsonb))`;
  const variantAt100 = h`EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(f.filters->'multivariate'->'variants') = 'array'
      THEN f.filters->'multivariate'->'variants' ELSE '[]'::jsonb END) v WHERE v->'rollout_percentage' = '100'::jsonb)`;
  return h`(f.filters = '{}'::jsonb
    OR (NOT ${multivariate} AND EXISTS (SELECT 1 FROM ${groups} g WHERE ${fullGroup}))
    OR (${multivariate} AND EXISTS (SELECT 1 FROM ${groups} g WHERE ${fullGroup}
          AND ((jsonb_typeof(g->'variant') = 'string' AND g->>'variant' <> '') OR ${variantAt100}))))`;
}

/** LIKE pattern matching `s` literally anywhere. */
function containsPattern(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * One page of live flags of the project matching `q`, plus the total count. Ties in the sort
 * order are broken by id so that pages never overlap or skip.
 */
export async function listFlags(h: Handle, projectId: number, q: FlagListQuery, limit: number, offset: number): Promise<{ count: number; rows: FlagRow[] }> {
  const conds = [h`f.project_id = ${projectId}`, h`NOT f.deleted`];
  if (q.active === 'stale') {
    conds.push(h`f.active AND (f.last_called_at < now() - make_interval(days => ${STALE_DAYS})
      OR (f.last_called_at IS NULL AND f.created_at < now() - make_interval(days => ${STALE_DAYS}) AND ${fullyRolledOutSql(h)}))`);
  } else if (q.active !== undefined) {
    conds.push(h`f.active = ${q.active}`);
  }
  const variants = h`(CASE WHEN jsonb_typeof(f.filters->'multivariate'->'variants') = 'array' THEN jsonb_array_length(f.filters->'multivariate'->'variants') ELSE 0 END)`;
  if (q.type === 'boolean') conds.push(h`${variants} = 0`);
  else if (q.type === 'multivariant') conds.push(h`${variants} > 0`);
  else if (q.type === 'experiment') conds.push(h`EXISTS (SELECT 1 FROM experiments e WHERE e.feature_flag_id = f.id AND NOT e.deleted)`);
  else if (q.type === 'remote_config') conds.push(h`f.is_remote_configuration`);
  if (q.eligibleForExperiments) {
    // E10 (research §3.8): at least two variants, the first `control`; not a survey's or product tour's internal flag.
    conds.push(h`${variants} >= 2 AND f.filters->'multivariate'->'variants'->0->>'key' = 'control'
      AND f.creation_context NOT IN ('surveys', 'product_tours')`);
  }
  if (q.search !== undefined) {
    const p = containsPattern(q.search);
    conds.push(h`(f.key ILIKE ${p} OR f.name ILIKE ${p})`);
  }
  if (q.tags !== undefined) conds.push(h`f.tags && ${h.array(q.tags)}::text[]`);
  if (q.excludedKeys !== undefined && q.excludedKeys.length > 0) conds.push(h`NOT (f.key = ANY(${h.array(q.excludedKeys)}::text[]))`);
  if (q.createdByIds !== undefined) conds.push(h`f.created_by_id = ANY(${h.array(q.createdByIds)}::bigint[])`);
  if (q.evaluationRuntime !== undefined) conds.push(h`f.evaluation_runtime = ${q.evaluationRuntime}`);
  if (q.hasEvaluationTags !== undefined) conds.push(q.hasEvaluationTags ? h`cardinality(f.evaluation_tags) > 0` : h`cardinality(f.evaluation_tags) = 0`);
  const where = conds.reduce((acc, c) => h`${acc} AND ${c}`);
  const dir = q.order.desc ? h`DESC` : h`ASC`;
  // NULLS LAST in both directions keeps never-called flags at the end of a last_called_at sort.
  const orderBy = h`${h('f.' + q.order.field)} ${dir} NULLS LAST, f.id ${dir}`;
  const [{ n }] = await h<{ n: number }[]>`SELECT count(*)::int AS n FROM feature_flags f WHERE ${where}`;
  const rows = await h<FlagRow[]>`${selectRows(h)} WHERE ${where} ORDER BY ${orderBy} LIMIT ${limit} OFFSET ${offset}`;
  return { count: n, rows };
}

/** Takes the project's flag-dependency lock until the transaction ends (see service.ts). */
export async function lockDependencies(tx: Tx, projectId: number): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${DEPENDENCY_LOCK_CLASS}, ${projectId}::int)`;
}

/** First key of the two-key advisory lock that serialises dependency-changing writes per project. */
const DEPENDENCY_LOCK_CLASS = 73_021_140;
