/**
 * `GET /api/projects/` and `GET /api/projects/<id>/` (spec §5 rule 3): the projects the key may
 * see — its organization's, narrowed to its scoped projects. Scope `project:read`.
 */
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import type { Deps, Route } from '../http/types.js';
import { listProjects, organizationUuid, serializeProject } from './store.js';

/** Routes of the projects resource. */
export function projectRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: '/api/projects', scope: 'project:read',
      async handler(ctx) {
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, rows } = await listProjects(deps.sql, ctx.auth.organizationId, ctx.auth.scopedTeams, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, rows.map((r) => serializeProject(r, r.organization_uuid))) };
      },
    },
    {
      method: 'GET', path: '/api/projects/:project_id', scope: 'project:read',
      async handler(ctx) {
        return { status: 200, body: serializeProject(ctx.project, await organizationUuid(deps.sql, ctx.project.organization_id)) };
      },
    },
  ];
}
