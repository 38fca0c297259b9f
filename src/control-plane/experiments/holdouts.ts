/**
 * Holdouts (research/posthog-management-api.md §3.10; PostHog `experiment_holdouts`): a share
 * of users kept out of every experiment that uses the holdout. Full CRUD with hard delete.
 *
 * - `filters` is a non-empty list of `{properties: [], rollout_percentage: 0..100, variant}`;
 *   after create each entry's variant is `holdout-<id>`.
 * - The flag of every experiment using the holdout carries it (`holdout` and `holdout_groups`,
 *   {@link holdoutFilters}; evaluated on nodes by the core): an update rewrites them, a
 *   delete clears them — in the same transaction, through the flag service (activity and
 *   change log included).
 * - Activity is logged under scope `Experiment`, as PostHog does.
 */
import { type JsonObject, isJsonObject, pyType } from '../../json-shapes.js';
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import { writeActivity } from '../activity/store.js';
import { diffRecords } from '../activity/diff.js';
import { userBasic, type UserRow } from '../users/serialize.js';
import type { FeatureFlagService } from '../feature-flags/service.js';

/** Activity scope of holdouts (PostHog logs them as experiments). */
export const HOLDOUT_ACTIVITY_SCOPE = 'Experiment';
const NAME_MAX = 400;

type Obj = JsonObject;

/** A holdout row with its creator. */
export interface HoldoutRow {
  id: number; project_id: number; name: string; description: string | null; filters: Obj[];
  created_by: UserRow | null; created_at: Date; updated_at: Date;
}

/** API shape (§2.5). */
export function serializeHoldout(r: HoldoutRow): Obj {
  return {
    id: r.id, name: r.name, description: r.description, filters: r.filters, created_by: userBasic(r.created_by),
    created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(),
  };
}

/**
 * What a flag's filters carry for a holdout, in both of PostHog's formats: the current
 * `holdout: {id, exclusion_percentage}` (read by PostHog's flags service and by posthog-node's
 * local evaluation) and the legacy `holdout_groups` (read by older servers and SDKs). Both mean
 * the same membership (src/evaluation/holdout.ts); null clears both.
 */
export function holdoutFilters(r: Pick<HoldoutRow, 'id' | 'filters'> | null): { holdout: Obj | null; holdout_groups: Obj[] | null } {
  if (r === null) return { holdout: null, holdout_groups: null };
  const groups = r.filters.map((f) => ({ properties: Array.isArray(f.properties) ? f.properties : [], rollout_percentage: f.rollout_percentage, variant: f.variant }));
  return { holdout: { id: r.id, exclusion_percentage: Number(groups[0]?.rollout_percentage ?? 0) }, holdout_groups: groups };
}

function validateFilters(raw: unknown): Obj[] {
  if (!Array.isArray(raw)) throw errors.validation(`Expected a list of items but got type "${pyType(raw)}".`, 'filters', 'not_a_list');
  return raw.map((f) => {
    if (!isJsonObject(f)) throw errors.validation('Each holdout filter must be an object.', 'filters');
    const pct = f.rollout_percentage;
    if (pct === undefined || pct === null) throw errors.validation('Rollout percentage must be present.', 'filters');
    if (typeof pct !== 'number' || !Number.isFinite(pct) || pct < 0 || pct > 100) throw errors.validation('Rollout percentage must be between 0 and 100.', 'filters');
    if (f.properties !== undefined && !Array.isArray(f.properties)) throw errors.validation('"properties" must be a list.', 'filters');
    return { properties: f.properties ?? [], rollout_percentage: pct, variant: f.variant ?? null };
  });
}

function text(v: unknown, attr: string, nullable: boolean): string | null {
  if (v === null && nullable) return null;
  if (typeof v !== 'string') throw errors.validation(v === null ? 'This field may not be null.' : 'Not a valid string.', attr, v === null ? 'null' : 'invalid');
  if (v.length > NAME_MAX) throw errors.validation(`Ensure this field has no more than ${NAME_MAX} characters.`, attr, 'max_length');
  return v;
}

interface HoldoutInput { name?: string; description?: string | null; filters?: Obj[] }

function validateBody(body: unknown, mode: 'create' | 'update'): HoldoutInput {
  if (body === undefined) body = {};
  if (!isJsonObject(body)) throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  const out: HoldoutInput = {};
  if ('name' in body) {
    out.name = text(body.name, 'name', false)!;
    if (out.name.trim() === '') throw errors.validation('This field may not be blank.', 'name', 'blank');
  } else if (mode === 'create') throw errors.required('name');
  if ('description' in body) out.description = text(body.description, 'description', true);
  if ('filters' in body) out.filters = validateFilters(body.filters);
  if (mode === 'create' && (out.filters === undefined || out.filters.length === 0)) throw errors.validation('Filters are required to create an holdout group', 'filters');
  return out;
}

function selectRows(h: Sql | Tx) {
  return h`SELECT h.id::int AS id, h.project_id::int AS project_id, h.name, h.description, h.filters, h.created_at, h.updated_at,
      to_jsonb(u) AS created_by FROM experiment_holdouts h LEFT JOIN users u ON u.id = h.created_by_id`;
}

/** One holdout of the project, or null. */
export async function getHoldout(h: Sql | Tx, projectId: number, id: number, forUpdate = false): Promise<HoldoutRow | null> {
  const rows = await h<HoldoutRow[]>`${selectRows(h)} WHERE h.project_id = ${projectId} AND h.id = ${id} ${forUpdate ? h`FOR UPDATE OF h` : h``}`;
  return rows[0] ?? null;
}

/** Holdout operations of one project. */
export class HoldoutService {
  constructor(private readonly sql: Sql, private readonly flags: FeatureFlagService) {}

  /** A page, newest first. */
  async list(projectId: number, limit: number, offset: number): Promise<{ count: number; results: Obj[] }> {
    const [{ n }] = await this.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM experiment_holdouts WHERE project_id = ${projectId}`;
    const rows = await this.sql<HoldoutRow[]>`${selectRows(this.sql)} WHERE h.project_id = ${projectId} ORDER BY h.created_at DESC, h.id DESC LIMIT ${limit} OFFSET ${offset}`;
    return { count: n ?? 0, results: rows.map(serializeHoldout) };
  }

  /** One holdout. @throws ApiError 404. */
  async get(projectId: number, id: number): Promise<Obj> {
    const row = await getHoldout(this.sql, projectId, id);
    if (!row) throw errors.notFound();
    return serializeHoldout(row);
  }

  /** Creates a holdout; entries get variant `holdout-<id>`. @throws ApiError 400. */
  async create(projectId: number, userId: number, body: unknown): Promise<Obj> {
    const input = validateBody(body, 'create');
    return this.sql.begin(async (tx) => {
      const [row] = await tx<{ id: number }[]>`INSERT INTO experiment_holdouts (project_id, name, description, filters, created_by_id)
        VALUES (${projectId}, ${input.name!}, ${input.description ?? null}, '[]', ${userId}) RETURNING id::int AS id`;
      const id = row!.id;
      const filters = input.filters!.map((f) => ({ ...f, variant: `holdout-${id}` }));
      await tx`UPDATE experiment_holdouts SET filters = ${tx.json(filters as never)} WHERE id = ${id}`;
      const created = (await getHoldout(tx, projectId, id))!;
      await writeActivity(tx, {
        projectId, userId, activity: 'created', scope: HOLDOUT_ACTIVITY_SCOPE, itemId: String(id), name: created.name,
        changes: diffRecords(HOLDOUT_ACTIVITY_SCOPE, null, { name: created.name, description: created.description, filters: created.filters }),
      });
      return serializeHoldout(created);
    }) as Promise<Obj>;
  }

  /** PATCH semantics; new filters reach the flags of every experiment using the holdout. @throws ApiError 404, 400. */
  async update(projectId: number, userId: number, id: number, body: unknown): Promise<Obj> {
    const input = validateBody(body, 'update');
    return this.sql.begin(async (tx) => {
      const current = await getHoldout(tx, projectId, id, true);
      if (!current) throw errors.notFound();
      const filters = input.filters ? input.filters.map((f) => ({ ...f, variant: `holdout-${id}` })) : current.filters;
      await tx`UPDATE experiment_holdouts SET name = ${input.name ?? current.name},
        description = ${input.description === undefined ? current.description : input.description},
        filters = ${tx.json(filters as never)}, updated_at = now() WHERE id = ${id}`;
      const updated = (await getHoldout(tx, projectId, id))!;
      const changes = diffRecords(HOLDOUT_ACTIVITY_SCOPE,
        { name: current.name, description: current.description, filters: current.filters },
        { name: updated.name, description: updated.description, filters: updated.filters });
      if (changes.length > 0) {
        await writeActivity(tx, { projectId, userId, activity: 'updated', scope: HOLDOUT_ACTIVITY_SCOPE, itemId: String(id), name: updated.name, changes });
      }
      if (input.filters) await this.rewriteFlags(tx, projectId, userId, id, holdoutFilters(updated));
      return serializeHoldout(updated);
    }) as Promise<Obj>;
  }

  /** Hard delete; the flags of experiments using it lose their holdout groups. @throws ApiError 404. */
  async delete(projectId: number, userId: number, id: number): Promise<void> {
    await this.sql.begin(async (tx) => {
      const current = await getHoldout(tx, projectId, id, true);
      if (!current) throw errors.notFound();
      await this.rewriteFlags(tx, projectId, userId, id, holdoutFilters(null));
      await tx`DELETE FROM experiment_holdouts WHERE id = ${id}`;
      await writeActivity(tx, { projectId, userId, activity: 'deleted', scope: HOLDOUT_ACTIVITY_SCOPE, itemId: String(id), name: current.name, changes: null });
    });
  }

  /** Sets the holdout filters on the flag of every live experiment using holdout `id`. */
  private async rewriteFlags(tx: Tx, projectId: number, userId: number, id: number, patch: ReturnType<typeof holdoutFilters>): Promise<void> {
    const flags = await tx<{ id: number; filters: Obj }[]>`SELECT DISTINCT f.id::int AS id, f.filters FROM experiments e
      JOIN feature_flags f ON f.id = e.feature_flag_id WHERE e.project_id = ${projectId} AND e.holdout_id = ${id} AND NOT e.deleted AND NOT f.deleted`;
    for (const f of flags) {
      await this.flags.updateIn(tx, projectId, userId, f.id, { filters: { ...f.filters, ...patch } });
    }
  }
}
