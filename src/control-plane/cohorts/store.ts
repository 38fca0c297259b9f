/**
 * SQL of the cohorts resource: rows in, {@link CohortRow} out. Every function takes the handle
 * to run on (the pool for reads, the write's transaction for writes).
 */
import type { Handle, Tx } from '../db/connect.js';
import type { CohortRow } from './types.js';

/** Columns of a cohort row, its creator and the live experiments using it as exposure cohort. */
function selectRows(h: Handle) {
  return h`SELECT c.*, c.id::int AS id, c.project_id::int AS project_id, to_jsonb(u) AS created_by,
      ARRAY(SELECT e.id::int FROM experiments e WHERE e.exposure_cohort_id = c.id AND NOT e.deleted ORDER BY e.id) AS experiment_set
    FROM cohorts c LEFT JOIN users u ON u.id = c.created_by_id`;
}

/** One cohort of the project (deleted included), or null; `forUpdate` locks the row. */
export async function getCohort(h: Handle, projectId: number, id: number, opts: { forUpdate?: boolean } = {}): Promise<CohortRow | null> {
  const rows = await h<CohortRow[]>`${selectRows(h)} WHERE c.project_id = ${projectId} AND c.id = ${id}
    ${opts.forUpdate ? h`FOR UPDATE OF c` : h``}`;
  return rows[0] ?? null;
}

/** Live cohorts of the project among `ids`, by id ascending. */
export async function getLiveCohorts(h: Handle, projectId: number, ids: readonly number[]): Promise<CohortRow[]> {
  if (ids.length === 0) return [];
  return h<CohortRow[]>`${selectRows(h)} WHERE c.project_id = ${projectId} AND NOT c.deleted
    AND c.id = ANY(${h.array(ids as number[])}::bigint[]) ORDER BY c.id`;
}

/** A page of live cohorts, newest first; `search` matches the name case-insensitively. */
export async function listCohorts(h: Handle, projectId: number, search: string | null, limit: number, offset: number): Promise<{ count: number; rows: CohortRow[] }> {
  const where = h`c.project_id = ${projectId} AND NOT c.deleted ${search ? h`AND c.name ILIKE ${`%${search.replace(/[\\%_]/g, '\\$&')}%`}` : h``}`;
  const [{ n }] = await h<{ n: number }[]>`SELECT count(*)::int AS n FROM cohorts c WHERE ${where}`;
  const rows = await h<CohortRow[]>`${selectRows(h)} WHERE ${where} ORDER BY c.id DESC LIMIT ${limit} OFFSET ${offset}`;
  return { count: n ?? 0, rows };
}

/** Filters of live cohorts of the project by id (for reference checks and compilation). */
export async function cohortFilters(h: Handle, projectId: number): Promise<Map<number, { filters: Record<string, unknown>; is_static: boolean; name: string }>> {
  const rows = await h<{ id: number; filters: Record<string, unknown>; is_static: boolean; name: string }[]>`
    SELECT id::int AS id, filters, is_static, name FROM cohorts WHERE project_id = ${projectId} AND NOT deleted`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** Inserts a cohort and returns its id. */
export async function insertCohort(tx: Tx, projectId: number, userId: number, w: {
  name: string; description: string; filters: Record<string, unknown>; groups: unknown[]; query: unknown; is_static: boolean; create_in_folder: string | null;
}): Promise<number> {
  const [row] = await tx<{ id: number }[]>`INSERT INTO cohorts
    (project_id, name, description, filters, groups, query, is_static, create_in_folder, created_by_id, count)
    VALUES (${projectId}, ${w.name}, ${w.description}, ${tx.json(w.filters as never)}, ${tx.json(w.groups as never)},
      ${w.query === undefined || w.query === null ? null : tx.json(w.query as never)}, ${w.is_static}, ${w.create_in_folder}, ${userId},
      ${w.is_static ? 0 : null})
    RETURNING id::int AS id`;
  return row!.id;
}

/** Writes the editable fields of a cohort. */
export async function updateCohort(tx: Tx, id: number, w: {
  name: string; description: string; filters: Record<string, unknown>; groups: unknown[]; query: unknown; deleted: boolean;
}): Promise<void> {
  await tx`UPDATE cohorts SET name = ${w.name}, description = ${w.description}, filters = ${tx.json(w.filters as never)},
    groups = ${tx.json(w.groups as never)}, query = ${w.query === undefined || w.query === null ? null : tx.json(w.query as never)},
    deleted = ${w.deleted}, updated_at = now() WHERE id = ${id}`;
}

/**
 * Adds the persons of `distinctIds` (in the project) to static cohort `id`; ids with no person
 * are skipped, as PostHog does. Returns persons.id of the persons newly added.
 */
export async function addMembers(tx: Tx, projectId: number, id: number, distinctIds: readonly string[]): Promise<number[]> {
  const rows = await tx<{ person_id: number }[]>`INSERT INTO cohort_people (cohort_id, person_id)
    SELECT DISTINCT ${id}::bigint, d.person_id FROM person_distinct_ids d
    WHERE d.project_id = ${projectId} AND d.distinct_id = ANY(${tx.array(distinctIds as string[])}::text[])
    ON CONFLICT DO NOTHING RETURNING person_id::int AS person_id`;
  await tx`UPDATE cohorts SET count = (SELECT count(*)::int FROM cohort_people WHERE cohort_id = ${id}),
    last_calculation = now(), is_calculating = false WHERE id = ${id}`;
  return rows.map((r) => r.person_id);
}

/** Adds persons (persons.id) to static cohort `id`; returns the ones newly added. Refreshes the count. */
export async function addPersonMembers(tx: Tx, id: number, personIds: readonly number[]): Promise<number[]> {
  const rows = personIds.length === 0 ? [] : await tx<{ person_id: number }[]>`INSERT INTO cohort_people (cohort_id, person_id)
    SELECT ${id}::bigint, p FROM unnest(${tx.array(personIds as number[])}::bigint[]) AS p
    ON CONFLICT DO NOTHING RETURNING person_id::int AS person_id`;
  await tx`UPDATE cohorts SET count = (SELECT count(*)::int FROM cohort_people WHERE cohort_id = ${id}) WHERE id = ${id}`;
  return rows.map((r) => r.person_id);
}

/** Live flags of the project whose filters reference cohort `id`. */
export async function flagsUsingCohort(h: Handle, projectId: number, id: number): Promise<{ id: number; key: string }[]> {
  return h<{ id: number; key: string }[]>`SELECT id::int AS id, key FROM feature_flags
    WHERE project_id = ${projectId} AND NOT deleted
      AND jsonb_path_exists(filters, '$.** ? (@.type == "cohort" && (@.value == $id || @.value == $sid))',
        ${h.json({ id, sid: String(id) } as never)})
    ORDER BY id`;
}

/** Person uuids (one page) of cohort `id`'s stored members, for `GET /cohorts/:id/persons`. */
export async function memberPage(h: Handle, id: number, limit: number, offset: number): Promise<{ count: number; rows: { uuid: string; distinct_ids: string[]; properties: Record<string, unknown>; created_at: Date }[] }> {
  const [{ n }] = await h<{ n: number }[]>`SELECT count(*)::int AS n FROM cohort_people WHERE cohort_id = ${id}`;
  const rows = await h<{ uuid: string; distinct_ids: string[]; properties: Record<string, unknown>; created_at: Date }[]>`
    SELECT p.uuid, p.properties, p.created_at,
      ARRAY(SELECT d.distinct_id FROM person_distinct_ids d WHERE d.person_id = p.id ORDER BY d.distinct_id) AS distinct_ids
    FROM cohort_people cp JOIN persons p ON p.id = cp.person_id WHERE cp.cohort_id = ${id}
    ORDER BY p.id LIMIT ${limit} OFFSET ${offset}`;
  return { count: n ?? 0, rows };
}
