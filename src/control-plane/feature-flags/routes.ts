/**
 * HTTP routes of the feature-flag resource (spec/API.md §4.2 F1–F6, F12): parse the request,
 * call {@link FeatureFlagService}, shape the reply. Auth, scope, project lookup and body parsing
 * happened before a handler runs (src/control-plane/http).
 *
 * | route | scope |
 * |---|---|
 * | GET  /feature_flags (F1), GET /feature_flags/:id (F3) | feature_flag:read |
 * | POST /feature_flags (F2), PATCH /feature_flags/:id (F4), DELETE (F5 → 405, no body) | feature_flag:write |
 * | GET  /feature_flags/activity (F12), GET /feature_flags/:id/activity (F6) | activity_log:read |
 *
 * PUT is accepted like PATCH (DRF's `update` with the same serializer; PostHog validates a PUT's
 * filters as an update too).
 */
import { errors } from '../../errors.js';
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import { numericIdParam } from '../http/params.js';
import type { Deps, Reply, RequestContext, Route } from '../http/types.js';
import { parseFlagListQuery } from './list-query.js';
import { FeatureFlagService, type ActivityPage } from './service.js';
import { ACTIVITY_QUERY, FLAG_BODY, FLAG_LIST_QUERY, FLAG_PARAMS, FLAGS_PARAMS } from './schemas.js';

const BASE = '/api/projects/:project_id/feature_flags';
const TAGS = ['feature_flags'] as const;
/** Activity pages (research §2.1): `limit` default 10, `page` default 1, both ≥ 1. */
const ACTIVITY_DEFAULT_LIMIT = 10;

/** DRF IntegerField(min_value=1) on a query parameter; absent → `fallback`. @throws ApiError 400 attr `name`. */
function queryInt(q: URLSearchParams, name: string, fallback: number): number {
  const raw = q.get(name);
  if (raw === null) return fallback;
  const s = raw.trim();
  if (!/^[+-]?\d+$/.test(s) || !Number.isSafeInteger(Number(s))) throw errors.validation('A valid integer is required.', name);
  const n = Number(s);
  if (n < 1) throw errors.validation('Ensure this value is greater than or equal to 1.', name, 'min_value');
  return n;
}

/** `url` with `page` and `limit` set (PostHog `format_query_params_absolute_url`). */
function pageUrl(url: URL, page: number, limit: number): string {
  const u = new URL(url);
  u.searchParams.set('page', String(page));
  u.searchParams.set('limit', String(limit));
  return u.toString();
}

/** PostHog's activity page response `{results, next, previous, total_count}`. */
function activityBody(url: URL, p: ActivityPage, page: number, limit: number) {
  return {
    results: p.results,
    next: page * limit < p.total ? pageUrl(url, page + 1, limit) : null,
    previous: page > 1 ? pageUrl(url, page - 1, limit) : null,
    total_count: p.total,
  };
}

/** Routes of the feature-flag resource. */
export function featureFlagRoutes(deps: Deps): Route[] {
  const service = new FeatureFlagService(deps.sql);

  const update = async (ctx: RequestContext): Promise<Reply> =>
    ({ status: 200, body: await service.update(ctx.project.id, ctx.auth.userId, numericIdParam(ctx), ctx.body === undefined ? {} : ctx.body) });

  const activity = async (ctx: RequestContext, id: number | null): Promise<Reply> => {
    const limit = queryInt(ctx.query, 'limit', ACTIVITY_DEFAULT_LIMIT);
    const page = queryInt(ctx.query, 'page', 1);
    const p = await service.activity(ctx.project.id, id, page, limit);
    if (!p) return { status: 404 }; // PostHog answers an unknown flag id with an empty 404
    return { status: 200, body: activityBody(ctx.url, p, page, limit) };
  };

  return [
    {
      method: 'GET', path: BASE, scope: 'feature_flag:read',
      schema: { summary: 'List feature flags (F1)', tags: TAGS, params: FLAGS_PARAMS, querystring: FLAG_LIST_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        const q = parseFlagListQuery(ctx.query);
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, results } = await service.list(ctx.project.id, q, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
      },
    },
    {
      method: 'POST', path: BASE, scope: 'feature_flag:write',
      schema: { summary: 'Create a feature flag (F2)', tags: TAGS, params: FLAGS_PARAMS, body: FLAG_BODY, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 201, body: await service.create(ctx.project.id, ctx.auth.userId, ctx.body === undefined ? {} : ctx.body) };
      },
    },
    {
      method: 'GET', path: `${BASE}/activity`, scope: 'activity_log:read',
      schema: { summary: 'Activity log of every flag of the project (F12)', tags: TAGS, params: FLAGS_PARAMS, querystring: ACTIVITY_QUERY, validatedBy: 'service' },
      handler: (ctx) => activity(ctx, null),
    },
    {
      method: 'GET', path: `${BASE}/:id`, scope: 'feature_flag:read',
      schema: { summary: 'Retrieve a feature flag (F3)', tags: TAGS, params: FLAG_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: await service.get(ctx.project.id, numericIdParam(ctx)) };
      },
    },
    {
      method: 'PATCH', path: `${BASE}/:id`, scope: 'feature_flag:write', handler: update,
      schema: { summary: 'Update a feature flag (F4)', tags: TAGS, params: FLAG_PARAMS, body: FLAG_BODY, validatedBy: 'service' },
    },
    {
      method: 'PUT', path: `${BASE}/:id`, scope: 'feature_flag:write', handler: update,
      schema: { summary: 'Update a feature flag (same as PATCH)', tags: TAGS, params: FLAG_PARAMS, body: FLAG_BODY, validatedBy: 'service' },
    },
    {
      method: 'DELETE', path: `${BASE}/:id`, scope: 'feature_flag:write',
      schema: { summary: 'Refused with 405: soft-delete with PATCH {"deleted": true} (F5)', tags: TAGS, params: FLAG_PARAMS, validatedBy: 'service' },
      async handler() {
        throw errors.deleteForbidden(); // hard delete is forbidden: PATCH {"deleted": true} (spec §7)
      },
    },
    {
      method: 'GET', path: `${BASE}/:id/activity`, scope: 'activity_log:read',
      schema: { summary: 'Activity log of one flag (F6)', tags: TAGS, params: FLAG_PARAMS, querystring: ACTIVITY_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        const raw = ctx.params.id ?? '';
        return /^\d{1,15}$/.test(raw) ? activity(ctx, Number(raw)) : { status: 404 };
      },
    },
  ];
}
