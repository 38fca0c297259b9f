/**
 * API shapes of dashboards, tiles and insights (PostHog's DashboardSerializer,
 * DashboardBasicSerializer, DashboardTileSerializer and InsightSerializer). Access-control fields
 * carry PostHog's values for an editor without restrictions (21 = everyone can edit, 37 = can edit).
 */
import type { JsonObject } from '../../json-shapes.js';
import { userBasic } from '../users/serialize.js';
import type { DashboardRow, InsightRow, TileRow } from './store.js';

/** Computed results of an insight (null when not computed). */
export interface InsightResult { result: unknown; lastRefresh: Date | null; timezone: string | null; range: JsonObject | null }

const NO_RESULT: InsightResult = { result: null, lastRefresh: null, timezone: null, range: null };
const ACCESS = { effective_restriction_level: 21, effective_privilege_level: 37, user_access_level: 'editor' } as const;

/** An insight. */
export function serializeInsight(r: InsightRow, res: InsightResult = NO_RESULT): JsonObject {
  const tiles = r.tiles.filter((t) => !t.deleted);
  return {
    id: r.id, short_id: r.short_id, name: r.name, derived_name: null, query: r.query, order: null, deleted: r.deleted,
    dashboards: tiles.map((t) => t.dashboard_id), dashboard_tiles: tiles.map((t) => ({ id: t.id, dashboard_id: t.dashboard_id, deleted: t.deleted })),
    last_refresh: res.lastRefresh?.toISOString() ?? null, cache_target_age: null, next_allowed_client_refresh: res.lastRefresh?.toISOString() ?? null,
    result: res.result, hasMore: false, columns: null,
    created_at: r.created_at.toISOString(), created_by: userBasic(r.created_by), description: r.description, updated_at: r.updated_at.toISOString(),
    tags: r.tags, favorited: r.favorited, last_modified_at: r.last_modified_at.toISOString(), last_modified_by: userBasic(r.last_modified_by),
    is_sample: r.is_sample, ...ACCESS, timezone: res.timezone, is_cached: false, query_status: null, hogql: null, types: null,
    resolved_date_range: res.range, alerts: [],
  };
}

/** The fields a dashboard list shows (DashboardBasicSerializer). */
export function serializeDashboardBasic(r: DashboardRow): JsonObject {
  return {
    id: r.id, name: r.name, description: r.description, pinned: r.pinned, created_at: r.created_at.toISOString(), created_by: userBasic(r.created_by),
    last_accessed_at: r.last_accessed_at?.toISOString() ?? null, last_viewed_at: null, is_shared: false, deleted: r.deleted,
    creation_mode: r.creation_mode, tags: r.tags, restriction_level: 21, ...ACCESS, access_control_version: 'v2', last_refresh: null, team_id: r.project_id,
  };
}

/** A dashboard with its tiles, each holding its insight (with results when computed). */
export function serializeDashboard(r: DashboardRow, tiles: { tile: TileRow; insight: InsightRow; result: InsightResult }[]): JsonObject {
  return {
    ...serializeDashboardBasic(r), filters: r.filters, variables: {}, breakdown_colors: [], data_color_theme_id: null,
    persisted_filters: r.filters, persisted_variables: {},
    tiles: tiles.map(({ tile, insight, result }) => ({
      id: tile.id, layouts: tile.layouts, color: tile.color, insight: serializeInsight(insight, result), text: null, deleted: tile.deleted,
      is_cached: false, last_refresh: result.lastRefresh?.toISOString() ?? null, filters_overrides: {},
    })),
  };
}
