/**
 * Dashboards and insights of a project (PostHog `/dashboards/` and `/insights/`).
 *
 * - Soft delete only (PATCH `{"deleted": true}`; DELETE answers 405, PostHog's ForbidDestroyModel).
 *   A deleted dashboard or insight is not listed and answers 404 except to the PATCH that restores it.
 * - Dashboards list pinned first, then by name; insights newest change first.
 * - An insight's `dashboards` (ids) is the set of dashboards it is a tile of: writing it adds tiles
 *   and soft-deletes the tiles of dashboards left out. Unknown or deleted ids → 400
 *   `Invalid pk "N" - object does not exist.` (DRF's PrimaryKeyRelatedField).
 * - `query` is stored as given (an object with a `kind`); retrieving an insight or a dashboard
 *   computes the results of the queries Switchyard can run (query/run.ts), null otherwise.
 * - Every write records an activity entry (`Dashboard`, `Insight`) in its transaction.
 */
import { type JsonObject, isJsonObject, pyType } from '../../json-shapes.js';
import type { Sql, Tx } from '../db/connect.js';
import { errors, ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { writeActivity } from '../activity/store.js';
import { diffRecords, updateVerb } from '../activity/diff.js';
import { boolField, charField, listField, tagify } from '../http/drf-fields.js';
import { runQuery } from '../query/run.js';
import type { QueryGate } from '../query/gate.js';
import {
  dashboardTiles, getDashboards, getInsights, insertInsight, upsertTile, type DashboardRow, type InsightRow,
} from './store.js';
import { serializeDashboard, serializeDashboardBasic, serializeInsight, type InsightResult } from './serialize.js';

type Obj = JsonObject;
const NAME_MAX = 400;
/** Activity scope of dashboards. */
export const DASHBOARD_ACTIVITY_SCOPE = 'Dashboard';
/** Activity scope of insights. */
export const INSIGHT_ACTIVITY_SCOPE = 'Insight';

/** The project an operation runs in (its time zone draws the results). */
export interface ProjectRef { id: number; timezone: string }

function dictionary(body: unknown): Obj {
  if (body === undefined) return {};
  if (!isJsonObject(body)) throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  return body;
}

function objectField(v: unknown, attr: string): Obj {
  if (!isJsonObject(v)) throw errors.validation('Value must be valid JSON.', attr);
  return v;
}

interface DashboardInput { name?: string | null; description?: string; pinned?: boolean; filters?: Obj; tags?: string[]; deleted?: boolean }

function validateDashboard(raw: unknown): DashboardInput {
  const b = dictionary(raw);
  const out: DashboardInput = {};
  if ('name' in b) out.name = b.name === null ? null : charField(b.name, 'name', { allowBlank: true, maxLength: NAME_MAX });
  if ('description' in b) out.description = charField(b.description, 'description', { allowBlank: true });
  if ('pinned' in b) out.pinned = boolField(b.pinned, 'pinned')!;
  if ('filters' in b) out.filters = objectField(b.filters, 'filters');
  if ('tags' in b) out.tags = tagify(listField(b.tags, 'tags'), 'tags');
  if ('deleted' in b) out.deleted = boolField(b.deleted, 'deleted')!;
  if (typeof b.use_template === 'string' && b.use_template !== '') throw errors.validation(`Invalid template key \`${b.use_template}\` provided.`, 'use_template');
  if (b.use_dashboard !== undefined && b.use_dashboard !== null) throw errors.validation('Duplicating a dashboard (use_dashboard) is not supported.', 'use_dashboard');
  return out;
}

interface InsightInput { name?: string | null; description?: string; query?: Obj | null; dashboards?: number[]; tags?: string[]; favorited?: boolean; deleted?: boolean }

function validateInsight(raw: unknown): InsightInput {
  const b = dictionary(raw);
  const out: InsightInput = {};
  if ('name' in b) out.name = b.name === null ? null : charField(b.name, 'name', { allowBlank: true, maxLength: NAME_MAX });
  if ('description' in b) out.description = b.description === null ? '' : charField(b.description, 'description', { allowBlank: true });
  if ('query' in b) {
    if (b.query === null) out.query = null;
    else {
      const q = objectField(b.query, 'query');
      if (typeof q.kind !== 'string') throw errors.validation('query needs a "kind".', 'query');
      out.query = q;
    }
  }
  if ('dashboards' in b) {
    out.dashboards = [...new Set(listField(b.dashboards, 'dashboards').map((d, i) => {
      const n = typeof d === 'number' ? d : typeof d === 'string' && /^\d{1,15}$/.test(d) ? Number(d) : NaN;
      if (!Number.isSafeInteger(n)) throw errors.validation(`Incorrect type. Expected pk value, received ${pyType(d)}.`, `dashboards__${i}`, 'incorrect_type');
      return n;
    }))];
  }
  if ('tags' in b) out.tags = tagify(listField(b.tags, 'tags'), 'tags');
  if ('favorited' in b) out.favorited = boolField(b.favorited, 'favorited')!;
  if ('deleted' in b) out.deleted = boolField(b.deleted, 'deleted')!;
  return out;
}

/**
 * Locks row `id` of `table` for an update in `tx` and reads it with `read`. A deleted row is found
 * only by the update that restores it (`deleted: false`). @throws ApiError 404.
 */
async function lockForUpdate<T extends { deleted: boolean }>(tx: Tx, table: 'dashboards' | 'insights', projectId: number, id: number,
  deleted: boolean | undefined, read: (tx: Tx, projectId: number, ids: number[]) => Promise<Map<number, T>>): Promise<T> {
  const [locked] = await tx`SELECT 1 FROM ${tx(table)} WHERE project_id = ${projectId} AND id = ${id} FOR UPDATE`;
  if (!locked) throw errors.notFound();
  const row = (await read(tx, projectId, [id])).get(id)!;
  if (row.deleted && deleted !== false) throw errors.notFound();
  return row;
}

const dashboardAudit = (r: DashboardRow): Obj => ({ name: r.name, description: r.description, pinned: r.pinned, filters: r.filters, tags: r.tags, deleted: r.deleted });
const insightAudit = (r: InsightRow): Obj => ({
  name: r.name, description: r.description, query: r.query, tags: r.tags, favorited: r.favorited, deleted: r.deleted,
  dashboards: r.tiles.filter((t) => !t.deleted).map((t) => t.dashboard_id),
});

/**
 * Dashboard and insight operations of one project. Insight results are queries: each runs
 * through `queries` (query/gate.ts: the query pool, the project's concurrency cap, a deadline)
 * and stops when `signal` (the request's) aborts.
 */
export class DashboardService {
  constructor(private readonly sql: Sql, private readonly log: Logger, private readonly queries: QueryGate) {}

  /**
   * Computes an insight's results; a query that cannot run (unsupported, refused over the
   * project's concurrency cap, past its time limit, client gone) gives null (logged), never an error.
   */
  async results(project: ProjectRef, r: InsightRow, signal?: AbortSignal): Promise<InsightResult> {
    if (!r.query) return { result: null, lastRefresh: null, timezone: null, range: null };
    const query = r.query;
    try {
      const res = await this.queries.run(project.id, signal, (sql, budget) => runQuery(sql, project, query, budget));
      return { result: res.results ?? res, lastRefresh: new Date(), timezone: project.timezone, range: (res.resolved_date_range as Obj | undefined) ?? null };
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      this.log.debug({ insight: r.id, err: e.message }, 'insight query not computed');
      return { result: null, lastRefresh: null, timezone: null, range: null };
    }
  }

  /** A page of live dashboards, pinned first, then by name. */
  async listDashboards(projectId: number, search: string | null, limit: number, offset: number): Promise<{ count: number; results: Obj[] }> {
    const like = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const [{ n }] = await this.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dashboards
      WHERE project_id = ${projectId} AND NOT deleted AND (${like}::text IS NULL OR name ILIKE ${like})`;
    const ids = await this.sql<{ id: number }[]>`SELECT id::int AS id FROM dashboards
      WHERE project_id = ${projectId} AND NOT deleted AND (${like}::text IS NULL OR name ILIKE ${like})
      ORDER BY pinned DESC, name NULLS LAST, id LIMIT ${limit} OFFSET ${offset}`;
    const rows = await getDashboards(this.sql, projectId, ids.map((r) => r.id));
    return { count: n ?? 0, results: ids.map((r) => serializeDashboardBasic(rows.get(r.id)!)) };
  }

  /** A live dashboard with its tiles and their results. @throws ApiError 404. */
  async getDashboard(project: ProjectRef, id: number, signal?: AbortSignal): Promise<Obj> {
    const row = (await getDashboards(this.sql, project.id, [id])).get(id);
    if (!row || row.deleted) throw errors.notFound();
    await this.sql`UPDATE dashboards SET last_accessed_at = now() WHERE id = ${id}`;
    return this.presentDashboard(project, { ...row, last_accessed_at: new Date() }, signal);
  }

  /**
   * A dashboard with its tiles' results, computed one tile after another: a dashboard holds one
   * of its project's query slots at a time, however many tiles it has.
   */
  private async presentDashboard(project: ProjectRef, row: DashboardRow, signal?: AbortSignal): Promise<Obj> {
    const tiles = await dashboardTiles(this.sql, row.id);
    const insights = await getInsights(this.sql, project.id, tiles.map((t) => t.insight_id));
    const drawn = [];
    for (const tile of tiles) {
      const insight = insights.get(tile.insight_id)!;
      drawn.push({ tile, insight, result: await this.results(project, insight, signal) });
    }
    return serializeDashboard(row, drawn);
  }

  /** Creates a dashboard. @throws ApiError 400. */
  async createDashboard(project: ProjectRef, userId: number, body: unknown, signal?: AbortSignal): Promise<Obj> {
    const input = validateDashboard(body);
    const row = await this.sql.begin((tx) => this.createDashboardIn(tx, project.id, userId, input)) as DashboardRow;
    return this.presentDashboard(project, row, signal);
  }

  /** Creates a dashboard inside `tx` (also for the flags' usage dashboards). */
  async createDashboardIn(tx: Tx, projectId: number, userId: number | null, input: DashboardInput & { creationMode?: string }): Promise<DashboardRow> {
    const [r] = await tx<{ id: number }[]>`INSERT INTO dashboards (project_id, name, description, pinned, filters, tags, creation_mode, created_by_id)
      VALUES (${projectId}, ${input.name ?? null}, ${input.description ?? ''}, ${input.pinned ?? false}, ${tx.json((input.filters ?? {}) as never)},
        ${tx.array(input.tags ?? [])}::text[], ${input.creationMode ?? 'default'}, ${userId}) RETURNING id::int AS id`;
    const row = (await getDashboards(tx, projectId, [r!.id])).get(r!.id)!;
    await writeActivity(tx, {
      projectId, userId, activity: 'created', scope: DASHBOARD_ACTIVITY_SCOPE, itemId: String(row.id), name: row.name,
      changes: diffRecords(DASHBOARD_ACTIVITY_SCOPE, null, dashboardAudit(row)),
    });
    return row;
  }

  /** PATCH semantics; `deleted` soft-deletes or restores. @throws ApiError 404, 400. */
  async updateDashboard(project: ProjectRef, userId: number, id: number, body: unknown, signal?: AbortSignal): Promise<Obj> {
    const input = validateDashboard(body);
    const row = await this.sql.begin(async (tx) => {
      const before = await lockForUpdate(tx, 'dashboards', project.id, id, input.deleted, getDashboards);
      await tx`UPDATE dashboards SET name = ${input.name === undefined ? before.name : input.name}, description = ${input.description ?? before.description},
        pinned = ${input.pinned ?? before.pinned}, filters = ${tx.json((input.filters ?? before.filters) as never)},
        tags = ${tx.array(input.tags ?? before.tags)}::text[], deleted = ${input.deleted ?? before.deleted} WHERE id = ${id}`;
      const after = (await getDashboards(tx, project.id, [id])).get(id)!;
      const changes = diffRecords(DASHBOARD_ACTIVITY_SCOPE, dashboardAudit(before), dashboardAudit(after));
      if (changes.length > 0) await writeActivity(tx, { projectId: project.id, userId, activity: updateVerb(changes), scope: DASHBOARD_ACTIVITY_SCOPE, itemId: String(id), name: after.name, changes });
      return after;
    }) as DashboardRow;
    return this.presentDashboard(project, row, signal);
  }

  /** A page of live insights, newest change first; `short_id` and `favorited` filter. */
  async listInsights(projectId: number, q: { shortId: string | null; favorited: boolean | null; search: string | null }, limit: number, offset: number): Promise<{ count: number; results: Obj[] }> {
    const like = q.search ? `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const where = this.sql`project_id = ${projectId} AND NOT deleted AND (${q.shortId}::text IS NULL OR short_id = ${q.shortId})
      AND (${q.favorited}::boolean IS NULL OR favorited = ${q.favorited}) AND (${like}::text IS NULL OR name ILIKE ${like})`;
    const [{ n }] = await this.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM insights WHERE ${where}`;
    const ids = await this.sql<{ id: number }[]>`SELECT id::int AS id FROM insights WHERE ${where} ORDER BY last_modified_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`;
    const rows = await getInsights(this.sql, projectId, ids.map((r) => r.id));
    return { count: n ?? 0, results: ids.map((r) => serializeInsight(rows.get(r.id)!)) };
  }

  /** A live insight with its results. @throws ApiError 404. */
  async getInsight(project: ProjectRef, id: number, signal?: AbortSignal): Promise<Obj> {
    const row = (await getInsights(this.sql, project.id, [id])).get(id);
    if (!row || row.deleted) throw errors.notFound();
    return serializeInsight(row, await this.results(project, row, signal));
  }

  /** Checks that every id is a live dashboard of the project. @throws ApiError 400 (attr `dashboards`). */
  private async checkDashboards(tx: Tx, projectId: number, ids: number[]): Promise<void> {
    const found = await getDashboards(tx, projectId, ids);
    for (const id of ids) {
      const d = found.get(id);
      if (!d || d.deleted) throw errors.validation(`Invalid pk "${id}" - object does not exist.`, 'dashboards', 'does_not_exist');
    }
  }

  /** Creates an insight, on the dashboards it names. @throws ApiError 400. */
  async createInsight(project: ProjectRef, userId: number, body: unknown, signal?: AbortSignal): Promise<Obj> {
    const input = validateInsight(body);
    const row = await this.sql.begin(async (tx) => {
      await this.checkDashboards(tx, project.id, input.dashboards ?? []);
      const id = await insertInsight(tx, project.id, userId, { name: input.name ?? null, description: input.description ?? '', query: input.query ?? null, tags: input.tags, favorited: input.favorited });
      for (const d of input.dashboards ?? []) await upsertTile(tx, d, id);
      const created = (await getInsights(tx, project.id, [id])).get(id)!;
      await writeActivity(tx, {
        projectId: project.id, userId, activity: 'created', scope: INSIGHT_ACTIVITY_SCOPE, itemId: String(id), name: created.name,
        changes: diffRecords(INSIGHT_ACTIVITY_SCOPE, null, insightAudit(created)),
      });
      return created;
    }) as InsightRow;
    return serializeInsight(row, await this.results(project, row, signal));
  }

  /** PATCH semantics; `dashboards` replaces the tile set. @throws ApiError 404, 400. */
  async updateInsight(project: ProjectRef, userId: number, id: number, body: unknown, signal?: AbortSignal): Promise<Obj> {
    const input = validateInsight(body);
    const row = await this.sql.begin(async (tx) => {
      const before = await lockForUpdate(tx, 'insights', project.id, id, input.deleted, getInsights);
      await tx`UPDATE insights SET name = ${input.name === undefined ? before.name : input.name}, description = ${input.description ?? before.description},
        query = ${input.query === undefined ? (before.query === null ? null : tx.json(before.query as never)) : input.query === null ? null : tx.json(input.query as never)},
        tags = ${tx.array(input.tags ?? before.tags)}::text[], favorited = ${input.favorited ?? before.favorited}, deleted = ${input.deleted ?? before.deleted},
        last_modified_by_id = ${userId}, last_modified_at = now(), updated_at = now() WHERE id = ${id}`;
      if (input.dashboards) {
        await this.checkDashboards(tx, project.id, input.dashboards);
        await tx`UPDATE dashboard_tiles SET deleted = true WHERE insight_id = ${id} AND NOT (dashboard_id = ANY(${tx.array(input.dashboards)}::bigint[]))`;
        for (const d of input.dashboards) await upsertTile(tx, d, id);
      }
      const after = (await getInsights(tx, project.id, [id])).get(id)!;
      const changes = diffRecords(INSIGHT_ACTIVITY_SCOPE, insightAudit(before), insightAudit(after));
      if (changes.length > 0) await writeActivity(tx, { projectId: project.id, userId, activity: updateVerb(changes), scope: INSIGHT_ACTIVITY_SCOPE, itemId: String(id), name: after.name, changes });
      return after;
    }) as InsightRow;
    return serializeInsight(row, await this.results(project, row, signal));
  }
}
