/**
 * F15 `GET /api/projects/:project_id/feature_flags/local_evaluation` (scope `feature_flag:read`):
 * the local-evaluation feed read straight from Postgres, the same body the evaluation nodes
 * serve at `GET /flags/definitions` (shared builder src/feed/definitions-feed.ts;
 * research/posthog-management-api.md §2.9).
 *
 * `send_cohorts` (bare `?send_cohorts` means true) includes the referenced non-static cohorts.
 * Weak ETag over the body, `Cache-Control: private, must-revalidate`, a matching
 * `If-None-Match` → 304 with no body; an organization over its flag quota → 402.
 */
import crypto from 'node:crypto';
import { errors } from '../../errors.js';
import type { Sql } from '../db/connect.js';
import { cohortEntity, featureFlagEntity, type FeatureFlagRow } from '../../contract/entities.js';
import { buildDefinitionsFeed } from '../../feed/definitions-feed.js';
import type { Deps, Route } from '../http/types.js';
import { FLAGS_PARAMS, LOCAL_EVALUATION_QUERY } from './schemas.js';

/** True for `?send_cohorts`, `?send_cohorts=true|1|yes` (PostHog's boolean query parsing). */
export function sendCohortsParam(query: URLSearchParams): boolean {
  if (!query.has('send_cohorts')) return false;
  const v = (query.get('send_cohorts') ?? '').trim().toLowerCase();
  return v === '' || v === 'true' || v === '1' || v === 'yes';
}

/** The feed body of a project as JSON text. */
export async function localEvaluationBody(sql: Sql, projectId: number, sendCohorts: boolean, propertyMatchingVersion = 1): Promise<string> {
  const [flags, cohorts, groupTypes] = await Promise.all([
    sql<FeatureFlagRow[]>`SELECT * FROM feature_flags WHERE project_id = ${projectId} AND NOT deleted ORDER BY id`,
    sql<{ id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }[]>`
      SELECT id, project_id, name, filters, is_static, deleted FROM cohorts WHERE project_id = ${projectId} AND NOT deleted ORDER BY id`,
    sql<{ group_type: string; group_type_index: number }[]>`
      SELECT group_type, group_type_index FROM group_type_mappings WHERE project_id = ${projectId} ORDER BY group_type_index`,
  ]);
  const groupTypeMapping: Record<string, string> = {};
  for (const g of groupTypes) groupTypeMapping[String(g.group_type_index)] = g.group_type;
  return JSON.stringify(buildDefinitionsFeed({
    revision: 0, flags: flags.map(featureFlagEntity), cohorts: cohorts.map(cohortEntity), groupTypeMapping, propertyMatchingVersion,
  }, sendCohorts));
}

/** The F15 route. */
export function localEvaluationRoutes(deps: Deps): Route[] {
  return [{
    method: 'GET', path: '/api/projects/:project_id/feature_flags/local_evaluation', scope: 'feature_flag:read', throttle: 'project_feed',
    schema: { summary: 'Local-evaluation feed for server SDKs (F15)', tags: ['feature_flags'], params: FLAGS_PARAMS, querystring: LOCAL_EVALUATION_QUERY, validatedBy: 'service' },
    async handler(ctx) {
      const [org] = await deps.sql<{ quota_limited: boolean }[]>`SELECT quota_limited FROM organizations WHERE id = ${ctx.project.organization_id}`;
      if (org?.quota_limited) throw errors.quotaLimited();
      const text = await localEvaluationBody(deps.sql, ctx.project.id, sendCohortsParam(ctx.query), ctx.project.property_matching_version);
      const etag = `W/"${crypto.createHash('sha1').update(text).digest('hex')}"`;
      const headers = { etag, 'cache-control': 'private, must-revalidate' };
      const inm = ctx.headers['if-none-match'];
      if (typeof inm === 'string' && inm.split(',').some((t) => t.trim() === etag || t.trim() === '*')) return { status: 304, headers };
      return { status: 200, body: JSON.parse(text), headers };
    },
  }];
}
