/**
 * Rows of dashboards, insights and the tiles that put an insight on a dashboard (migration 0012),
 * read with their creators, and the writes every caller shares (insert an insight and its tile).
 */
import crypto from 'node:crypto';
import type { Handle, Tx } from '../db/connect.js';
import type { UserRow } from '../users/serialize.js';
import type { JsonObject } from '../../json-shapes.js';

/** A dashboards row with its creator. */
export interface DashboardRow {
  id: number; project_id: number; name: string | null; description: string; pinned: boolean; filters: JsonObject;
  creation_mode: string; tags: string[]; deleted: boolean; created_by: UserRow | null; created_at: Date; last_accessed_at: Date | null;
}

/** An insights row with its creator, last modifier and live tiles. */
export interface InsightRow {
  id: number; project_id: number; short_id: string; name: string | null; description: string; query: JsonObject | null;
  tags: string[]; favorited: boolean; is_sample: boolean; deleted: boolean; created_by: UserRow | null; created_at: Date;
  last_modified_by: UserRow | null; last_modified_at: Date; updated_at: Date;
  tiles: { id: number; dashboard_id: number; deleted: boolean }[];
}

/** A tile with its layouts and colour. */
export interface TileRow { id: number; dashboard_id: number; insight_id: number; layouts: JsonObject; color: string | null; deleted: boolean }

/** PostHog's insight short ids: 8 characters of [0-9A-Za-z]. */
export function newShortId(): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return Array.from(crypto.randomBytes(8), (b) => alphabet[b % alphabet.length]).join('');
}

/** Dashboards of a project by id (deleted ones included). */
export async function getDashboards(h: Handle, projectId: number, ids: number[]): Promise<Map<number, DashboardRow>> {
  if (ids.length === 0) return new Map();
  const rows = await h<DashboardRow[]>`SELECT d.id::int AS id, d.project_id::int AS project_id, d.name, d.description, d.pinned, d.filters,
      d.creation_mode, d.tags, d.deleted, to_jsonb(u) AS created_by, d.created_at, d.last_accessed_at
    FROM dashboards d LEFT JOIN users u ON u.id = d.created_by_id
    WHERE d.project_id = ${projectId} AND d.id = ANY(${h.array(ids)}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** Insights of a project by id (deleted ones included), with their tiles. */
export async function getInsights(h: Handle, projectId: number, ids: number[]): Promise<Map<number, InsightRow>> {
  if (ids.length === 0) return new Map();
  const rows = await h<InsightRow[]>`SELECT i.id::int AS id, i.project_id::int AS project_id, i.short_id, i.name, i.description, i.query,
      i.tags, i.favorited, i.is_sample, i.deleted, to_jsonb(c) AS created_by, i.created_at, to_jsonb(m) AS last_modified_by,
      i.last_modified_at, i.updated_at,
      COALESCE((SELECT jsonb_agg(jsonb_build_object('id', t.id, 'dashboard_id', t.dashboard_id, 'deleted', t.deleted) ORDER BY t.id)
        FROM dashboard_tiles t JOIN dashboards d ON d.id = t.dashboard_id AND NOT d.deleted WHERE t.insight_id = i.id), '[]') AS tiles
    FROM insights i LEFT JOIN users c ON c.id = i.created_by_id LEFT JOIN users m ON m.id = i.last_modified_by_id
    WHERE i.project_id = ${projectId} AND i.id = ANY(${h.array(ids)}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** The live tiles of a dashboard, in layout order (y, then x, then id). */
export async function dashboardTiles(h: Handle, dashboardId: number): Promise<TileRow[]> {
  return h<TileRow[]>`SELECT t.id::int AS id, t.dashboard_id::int AS dashboard_id, t.insight_id::int AS insight_id, t.layouts, t.color, t.deleted
    FROM dashboard_tiles t JOIN insights i ON i.id = t.insight_id AND NOT i.deleted
    WHERE t.dashboard_id = ${dashboardId} AND NOT t.deleted
    ORDER BY COALESCE((t.layouts->'sm'->>'y')::int, 0), COALESCE((t.layouts->'sm'->>'x')::int, 0), t.id`;
}

/** What a new insight holds. */
export interface NewInsight {
  name: string | null; description: string; query: JsonObject | null; tags?: string[]; favorited?: boolean; isSample?: boolean;
}

/** Inserts an insight. @returns its id. */
export async function insertInsight(tx: Tx, projectId: number, userId: number | null, i: NewInsight): Promise<number> {
  const [row] = await tx<{ id: number }[]>`INSERT INTO insights (project_id, short_id, name, description, query, tags, favorited, is_sample, created_by_id, last_modified_by_id)
    VALUES (${projectId}, ${newShortId()}, ${i.name}, ${i.description}, ${i.query === null ? null : tx.json(i.query as never)},
      ${tx.array(i.tags ?? [])}::text[], ${i.favorited ?? false}, ${i.isSample ?? false}, ${userId}, ${userId})
    RETURNING id::int AS id`;
  return row!.id;
}

/** Puts an insight on a dashboard (a tile), or revives its soft-deleted tile. */
export async function upsertTile(tx: Tx, dashboardId: number, insightId: number, layouts: JsonObject = {}, color: string | null = null): Promise<void> {
  await tx`INSERT INTO dashboard_tiles (dashboard_id, insight_id, layouts, color) VALUES (${dashboardId}, ${insightId}, ${tx.json(layouts as never)}, ${color})
    ON CONFLICT (dashboard_id, insight_id) DO UPDATE SET deleted = false`;
}
