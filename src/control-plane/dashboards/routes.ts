/**
 * HTTP routes of dashboards and insights (PostHog `/api/projects/:id/dashboards/`
 * and `/insights/`):
 *
 * | route | scope |
 * |---|---|
 * | GET /dashboards (limit, offset, search), GET /dashboards/:id (tiles with results) | dashboard:read |
 * | POST /dashboards, PATCH/PUT /dashboards/:id (`deleted` soft-deletes) | dashboard:write |
 * | GET /insights (limit, offset, short_id, favorited, search), GET /insights/:id (with `result`) | insight:read |
 * | POST /insights, PATCH/PUT /insights/:id | insight:write |
 * | DELETE on either → 405 (soft delete is PATCH `{"deleted": true}`) | the write scope |
 */
import { errors } from '../../errors.js';
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import { numericIdParam } from '../http/params.js';
import { LIMIT_OFFSET, bool, object, projectParams, str, strings } from '../http/schema-parts.js';
import type { Deps, JsonSchema, Reply, RequestContext, Route } from '../http/types.js';
import { DashboardService } from './service.js';
import type { QueryGate } from '../query/gate.js';

const DASHBOARD_BODY: JsonSchema = object({
  name: str('Name (at most 400 characters).'), description: str('Free text.'), pinned: bool('Listed first.'),
  filters: { type: 'object', description: 'Dashboard filters, e.g. `{"date_from": "-30d"}` (stored).' },
  tags: strings('Tags (trimmed, lower-cased).'), deleted: bool('Soft delete or restore.'),
});
const INSIGHT_BODY: JsonSchema = object({
  name: str('Name (at most 400 characters).'), description: str('Free text.'),
  query: { type: 'object', description: 'The query, e.g. `{"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", ...}}`.' },
  dashboards: { type: 'array', items: { type: 'integer' }, description: 'Ids of the dashboards the insight is a tile of (replaces the set).' },
  tags: strings('Tags (trimmed, lower-cased).'), favorited: bool('Starred.'), deleted: bool('Soft delete or restore.'),
});

function flag(ctx: RequestContext, name: string): boolean | null {
  const v = ctx.query.get(name);
  return v === null || v === '' ? null : ['true', '1', 'True'].includes(v);
}

/** Routes of dashboards and insights; insights' results run through `queries` (query/gate.ts). */
export function dashboardRoutes(deps: Deps, queries: QueryGate): Route[] {
  const service = new DashboardService(deps.sql, deps.log, queries);
  const refuseDelete = async (): Promise<Reply> => { throw errors.deleteForbidden(); };
  const routes: Route[] = [];
  const resource = (collection: 'dashboards' | 'insights', noun: string, scopeObject: string, body: JsonSchema, query: JsonSchema,
    list: (ctx: RequestContext, limit: number, offset: number) => Promise<{ count: number; results: unknown[] }>,
    get: (ctx: RequestContext, id: number) => Promise<unknown>, create: (ctx: RequestContext) => Promise<unknown>,
    update: (ctx: RequestContext, id: number) => Promise<unknown>) => {
    const base = `/api/projects/:project_id/${collection}`;
    const tags = [collection];
    const one = projectParams({ id: str('Numeric id.') });
    const doUpdate = async (ctx: RequestContext): Promise<Reply> => ({ status: 200, body: await update(ctx, numericIdParam(ctx)) });
    routes.push(
      {
        method: 'GET', path: base, scope: `${scopeObject}:read`,
        schema: { summary: `List ${noun}s`, tags, params: projectParams(), querystring: query, validatedBy: 'service' },
        async handler(ctx) {
          const { limit, offset } = parseLimitOffset(ctx.query);
          const { count, results } = await list(ctx, limit, offset);
          return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
        },
      },
      {
        method: 'POST', path: base, scope: `${scopeObject}:write`,
        schema: { summary: `Create a ${noun}`, tags, params: projectParams(), body, validatedBy: 'service' },
        async handler(ctx) { return { status: 201, body: await create(ctx) }; },
      },
      {
        method: 'GET', path: `${base}/:id`, scope: `${scopeObject}:read`,
        schema: { summary: `Retrieve a ${noun} with computed results`, tags, params: one, validatedBy: 'service' },
        async handler(ctx) { return { status: 200, body: await get(ctx, numericIdParam(ctx)) }; },
      },
      { method: 'PATCH', path: `${base}/:id`, scope: `${scopeObject}:write`, handler: doUpdate, schema: { summary: `Update a ${noun}; \`deleted\` soft-deletes or restores`, tags, params: one, body, validatedBy: 'service' } },
      { method: 'PUT', path: `${base}/:id`, scope: `${scopeObject}:write`, handler: doUpdate, schema: { summary: `Update a ${noun} (same as PATCH)`, tags, params: one, body, validatedBy: 'service' } },
      { method: 'DELETE', path: `${base}/:id`, scope: `${scopeObject}:write`, handler: refuseDelete, schema: { summary: 'Refused with 405: soft-delete with PATCH {"deleted": true}', tags, params: one, validatedBy: 'service' } },
    );
  };
  resource('dashboards', 'dashboard', 'dashboard', DASHBOARD_BODY, object({ ...LIMIT_OFFSET, search: str('Substring of the name.') }),
    (ctx, limit, offset) => service.listDashboards(ctx.project.id, ctx.query.get('search'), limit, offset),
    (ctx, id) => service.getDashboard(ctx.project, id, ctx.signal),
    (ctx) => service.createDashboard(ctx.project, ctx.auth.userId, ctx.body, ctx.signal),
    (ctx, id) => service.updateDashboard(ctx.project, ctx.auth.userId, id, ctx.body, ctx.signal));
  resource('insights', 'insight', 'insight', INSIGHT_BODY,
    object({ ...LIMIT_OFFSET, short_id: str('The insight\'s short id.'), favorited: str('`true`: starred only.'), search: str('Substring of the name.') }),
    (ctx, limit, offset) => service.listInsights(ctx.project.id, { shortId: ctx.query.get('short_id'), favorited: flag(ctx, 'favorited'), search: ctx.query.get('search') }, limit, offset),
    (ctx, id) => service.getInsight(ctx.project, id, ctx.signal),
    (ctx) => service.createInsight(ctx.project, ctx.auth.userId, ctx.body, ctx.signal),
    (ctx, id) => service.updateInsight(ctx.project, ctx.auth.userId, id, ctx.body, ctx.signal));
  return routes;
}
