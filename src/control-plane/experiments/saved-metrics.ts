/**
 * Saved (shared) metrics (research/posthog-management-api.md §3.11; PostHog
 * `experiment_saved_metrics`): one ExperimentMetric reused by several experiments. Full CRUD
 * with hard delete (the experiments' links go with it).
 *
 * - `query` is required and must be a valid ExperimentMetric (./metrics.ts); the server
 *   assigns `query.uuid` at create and refuses to change it later.
 * - Names are unique per project, case-insensitively.
 * - Lists are ordered by lower(name).
 */
import { type JsonObject, isJsonObject, pyType } from '../../json-shapes.js';
import crypto from 'node:crypto';
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import { writeActivity } from '../activity/store.js';
import { diffRecords } from '../activity/diff.js';
import { userBasic, type UserRow } from '../users/serialize.js';
import { validateMetric } from './metrics.js';

/** Activity scope of saved metrics. */
export const SAVED_METRIC_ACTIVITY_SCOPE = 'ExperimentSavedMetric';
const TEXT_MAX = 400;
/** Name of the unique index on (project, lower(name)) (migration 0008). */
const NAME_INDEX = 'experiment_saved_metrics_name';

type Obj = JsonObject;

/** A saved-metric row with its creator. */
export interface SavedMetricRow {
  id: number; project_id: number; name: string; description: string | null; query: Obj; tags: string[];
  created_by: UserRow | null; created_at: Date; updated_at: Date;
}

/** API shape (§3.11). */
export function serializeSavedMetric(r: SavedMetricRow): Obj {
  return {
    id: r.id, name: r.name, description: r.description, query: r.query, created_by: userBasic(r.created_by),
    created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(), tags: r.tags, user_access_level: 'editor',
  };
}

function text(v: unknown, attr: string, nullable: boolean): string | null {
  if (v === null && nullable) return null;
  if (typeof v !== 'string') throw errors.validation(v === null ? 'This field may not be null.' : 'Not a valid string.', attr, v === null ? 'null' : 'invalid');
  if (v.length > TEXT_MAX) throw errors.validation(`Ensure this field has no more than ${TEXT_MAX} characters.`, attr, 'max_length');
  return v;
}

interface Input { name?: string; description?: string | null; query?: Obj; tags?: string[] }

function validateBody(body: unknown, mode: 'create' | 'update'): Input {
  if (body === undefined) body = {};
  if (!isJsonObject(body)) throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  const out: Input = {};
  if ('name' in body) {
    out.name = text(body.name, 'name', false)!.trim();
    if (out.name === '') throw errors.validation('This field may not be blank.', 'name', 'blank');
  } else if (mode === 'create') throw errors.required('name');
  if ('description' in body) out.description = text(body.description, 'description', true);
  if ('query' in body && body.query !== null) out.query = validateMetric(body.query, 'query');
  else if (mode === 'create') throw errors.validation('Query is required to create a saved metric', 'query');
  if ('tags' in body) {
    if (!Array.isArray(body.tags) || !body.tags.every((t) => typeof t === 'string')) throw errors.validation('Expected a list of strings.', 'tags', 'not_a_list');
    out.tags = [...new Set((body.tags as string[]).map((t) => t.trim().toLowerCase()).filter((t) => t !== ''))];
  }
  return out;
}

function translate(e: unknown): never {
  const err = e as { code?: string; constraint_name?: string };
  if (err?.code === '23505' && err.constraint_name === NAME_INDEX) throw errors.validation('A shared metric with this name already exists.', 'name', 'unique');
  throw e;
}

function selectRows(h: Sql | Tx) {
  return h`SELECT m.id::int AS id, m.project_id::int AS project_id, m.name, m.description, m.query, m.tags, m.created_at, m.updated_at,
      to_jsonb(u) AS created_by FROM experiment_saved_metrics m LEFT JOIN users u ON u.id = m.created_by_id`;
}

/** Saved metrics of the project by id (for experiment links). */
export async function getSavedMetrics(h: Sql | Tx, projectId: number, ids: number[]): Promise<Map<number, SavedMetricRow>> {
  if (ids.length === 0) return new Map();
  const rows = await h<SavedMetricRow[]>`${selectRows(h)} WHERE m.project_id = ${projectId} AND m.id = ANY(${h.array(ids)}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** Saved-metric operations of one project. */
export class SavedMetricService {
  constructor(private readonly sql: Sql) {}

  /** A page ordered by lower(name). */
  async list(projectId: number, limit: number, offset: number): Promise<{ count: number; results: Obj[] }> {
    const [{ n }] = await this.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM experiment_saved_metrics WHERE project_id = ${projectId}`;
    const rows = await this.sql<SavedMetricRow[]>`${selectRows(this.sql)} WHERE m.project_id = ${projectId}
      ORDER BY lower(m.name), m.id LIMIT ${limit} OFFSET ${offset}`;
    return { count: n ?? 0, results: rows.map(serializeSavedMetric) };
  }

  /** One saved metric. @throws ApiError 404. */
  async get(projectId: number, id: number): Promise<Obj> {
    const row = (await getSavedMetrics(this.sql, projectId, [id])).get(id);
    if (!row) throw errors.notFound();
    return serializeSavedMetric(row);
  }

  /** Creates one; `query.uuid` is assigned. @throws ApiError 400. */
  async create(projectId: number, userId: number, body: unknown): Promise<Obj> {
    const input = validateBody(body, 'create');
    input.query!.uuid = crypto.randomUUID();
    return this.sql.begin(async (tx) => {
      const [row] = await tx<{ id: number }[]>`INSERT INTO experiment_saved_metrics (project_id, name, description, query, tags, created_by_id)
        VALUES (${projectId}, ${input.name!}, ${input.description ?? null}, ${tx.json(input.query as never)}, ${tx.array(input.tags ?? [])}::text[], ${userId})
        RETURNING id::int AS id`.catch(translate);
      const created = (await getSavedMetrics(tx, projectId, [row!.id])).get(row!.id)!;
      await writeActivity(tx, {
        projectId, userId, activity: 'created', scope: SAVED_METRIC_ACTIVITY_SCOPE, itemId: String(created.id), name: created.name,
        changes: diffRecords(SAVED_METRIC_ACTIVITY_SCOPE, null, { name: created.name, description: created.description, query: created.query }),
      });
      return serializeSavedMetric(created);
    }) as Promise<Obj>;
  }

  /** PATCH semantics. @throws ApiError 404, 400 (uuid changed, name taken). */
  async update(projectId: number, userId: number, id: number, body: unknown): Promise<Obj> {
    const input = validateBody(body, 'update');
    return this.sql.begin(async (tx) => {
      const [locked] = await tx`SELECT 1 FROM experiment_saved_metrics WHERE project_id = ${projectId} AND id = ${id} FOR UPDATE`;
      if (!locked) throw errors.notFound();
      const current = (await getSavedMetrics(tx, projectId, [id])).get(id)!;
      if (input.query) {
        const given = (body as Obj & { query: Obj }).query.uuid;
        if (given !== undefined && given !== current.query.uuid) throw errors.validation('Saved metric UUID cannot be changed', 'query');
        input.query.uuid = current.query.uuid;
      }
      await tx`UPDATE experiment_saved_metrics SET name = ${input.name ?? current.name},
        description = ${input.description === undefined ? current.description : input.description},
        query = ${tx.json((input.query ?? current.query) as never)}, tags = ${tx.array(input.tags ?? current.tags)}::text[], updated_at = now()
        WHERE id = ${id}`.catch(translate);
      const updated = (await getSavedMetrics(tx, projectId, [id])).get(id)!;
      const changes = diffRecords(SAVED_METRIC_ACTIVITY_SCOPE,
        { name: current.name, description: current.description, query: current.query },
        { name: updated.name, description: updated.description, query: updated.query });
      if (changes.length > 0) {
        await writeActivity(tx, { projectId, userId, activity: 'updated', scope: SAVED_METRIC_ACTIVITY_SCOPE, itemId: String(id), name: updated.name, changes });
      }
      return serializeSavedMetric(updated);
    }) as Promise<Obj>;
  }

  /** Hard delete (links to experiments go with it). @throws ApiError 404. */
  async delete(projectId: number, userId: number, id: number): Promise<void> {
    await this.sql.begin(async (tx) => {
      const [row] = await tx<{ name: string }[]>`DELETE FROM experiment_saved_metrics WHERE project_id = ${projectId} AND id = ${id} RETURNING name`;
      if (!row) throw errors.notFound();
      await writeActivity(tx, { projectId, userId, activity: 'deleted', scope: SAVED_METRIC_ACTIVITY_SCOPE, itemId: String(id), name: row.name, changes: null });
    });
  }
}
