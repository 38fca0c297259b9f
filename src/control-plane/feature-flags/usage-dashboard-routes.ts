/**
 * F8 `POST /feature_flags/:id/dashboard` and F9 `POST /feature_flags/:id/enrich_usage_dashboard`
 * (spec/API.md §4.2; research/posthog-management-api.md §2.3–2.4), with PostHog's bodies:
 *
 * - F8 always creates a new usage dashboard and points the flag's `usage_dashboard` at it, adding
 *   the enriched insights when the flag `has_enriched_analytics`: 200 `{"success": true}`; a
 *   failure 400 `{"success": false, "error": "Unable to generate usage dashboard"}`.
 * - F9 adds the enriched insights: 400 `{"success": false, "error": …}` with, checked in this order,
 *   "Usage dashboard not found", "Usage dashboard already has enriched data", "No enriched
 *   analytics available for this feature flag", "Unable to enrich usage dashboard".
 * - An unknown flag is 404. Pointing `usage_dashboard` elsewhere is not a flag edit: no version
 *   bump, no activity entry, nothing for the nodes (PostHog saves the model directly).
 * - Scope `feature_flag:write`: they change the flag and write its own usage dashboard (PostHog's
 *   current API asks only `feature_flag:read`, which would let a read-only key write).
 */
import { errors } from '../../errors.js';
import { numericIdParam } from '../http/params.js';
import type { Deps, Reply, RequestContext, Route } from '../http/types.js';
import { addEnrichedInsights, createUsageDashboard, hasEnrichedInsights } from '../dashboards/usage-dashboard.js';
import * as store from './store.js';
import { FLAG_PARAMS } from './schemas.js';

const BASE = '/api/projects/:project_id/feature_flags/:id';
const TAGS = ['feature_flags'] as const;

const failure = (error: string): Reply => ({ status: 400, body: { success: false, error } });

/** F8 and F9. */
export function usageDashboardRoutes(deps: Deps): Route[] {
  const flagOf = async (ctx: RequestContext) => {
    const flag = await store.getFlag(deps.sql, ctx.project.id, numericIdParam(ctx));
    if (!flag) throw errors.notFound();
    return flag;
  };
  return [
    {
      method: 'POST', path: `${BASE}/dashboard`, scope: 'feature_flag:write',
      schema: { summary: "Create the flag's usage dashboard (F8)", tags: TAGS, params: FLAG_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        const flag = await flagOf(ctx);
        try {
          await deps.sql.begin(async (tx) => {
            const dashboard = await createUsageDashboard(tx, ctx.project.id, ctx.auth.userId, flag.key);
            if (flag.has_enriched_analytics) await addEnrichedInsights(tx, ctx.project.id, ctx.auth.userId, dashboard, flag.key);
            await tx`UPDATE feature_flags SET usage_dashboard = ${dashboard} WHERE id = ${flag.id}`;
          });
        } catch (e) {
          deps.log.error({ err: e, flag: flag.id }, 'usage dashboard not generated');
          return failure('Unable to generate usage dashboard');
        }
        return { status: 200, body: { success: true } };
      },
    },
    {
      method: 'POST', path: `${BASE}/enrich_usage_dashboard`, scope: 'feature_flag:write',
      schema: { summary: "Add the enriched insights to the flag's usage dashboard (F9)", tags: TAGS, params: FLAG_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        const flag = await flagOf(ctx);
        return deps.sql.begin(async (tx) => {
          const [dashboard] = flag.usage_dashboard === null ? []
            : await tx`SELECT 1 FROM dashboards WHERE id = ${flag.usage_dashboard} AND project_id = ${ctx.project.id} AND NOT deleted FOR UPDATE`;
          if (!dashboard) return failure('Usage dashboard not found');
          if (await hasEnrichedInsights(tx, ctx.project.id, flag.usage_dashboard!)) return failure('Usage dashboard already has enriched data');
          if (!flag.has_enriched_analytics) return failure('No enriched analytics available for this feature flag');
          await addEnrichedInsights(tx, ctx.project.id, ctx.auth.userId, flag.usage_dashboard!, flag.key);
          return { status: 200, body: { success: true } };
        }) as Promise<Reply>;
      },
    },
  ];
}
