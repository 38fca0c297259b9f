/**
 * The projects resource (PostHog's ProjectViewSet; spec §5 rule 3):
 * - `GET /api/projects/`, `GET /api/projects/<id>/` (scope `project:read`): the projects the key
 *   may see — its organization's live ones, narrowed to its scoped projects.
 * - `POST /api/projects/` (scope `project:write`): a new project in the key's organization with
 *   its own `phc_…` API key; `name` defaults to `Default project`, `timezone` to `UTC`, settings
 *   to their defaults (projects/validate.ts). A key limited to projects cannot create one (403):
 *   the new project would be outside its scope. Answers 201 with the project.
 * - `PATCH /api/projects/<id>/` (scope `project:write`): `name`, `timezone` and the remote-config
 *   settings; other fields are read-only and ignored as DRF ignores them (`api_token` among them).
 * - `DELETE /api/projects/<id>/` (scope `project:write`): 204; the project leaves the API and
 *   every node (projects/store.ts `deleteProject`).
 * - `PATCH /api/projects/<id>/reset_token/` (scope `project:write`; PostHog's `reset_token`
 *   action) replaces the project API key with a new `phc_…` key and answers the project; the
 *   replaced key keeps working for `config.projectTokenOverlapSeconds`. The body is ignored.
 * Every write reaches the nodes through the change log (projects/store.ts).
 */
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import type { Deps, Route } from '../http/types.js';
import { errors } from '../../errors.js';
import { PROJECT_BOOLEAN_SETTING_KEYS } from '../../contract/entities.js';
import { LIMIT_OFFSET, object, projectParams, str } from '../http/schema-parts.js';
import { createProject, deleteProject, listProjects, organizationUuid, resetProjectToken, serializeProject, updateProject } from './store.js';
import { DEFAULT_PROJECT_NAME, parseProjectBody } from './validate.js';

const TAGS = ['projects'] as const;
/** POST / PATCH body: name, zone and the remote-config settings. */
const PROJECT_BODY = object({
  name: str('Project name (max 200 characters; default `Default project` on create).', { maxLength: 200 }),
  timezone: str('IANA time zone of the project (default `UTC`).'),
  ...Object.fromEntries(PROJECT_BOOLEAN_SETTING_KEYS.map((k) => [k, { type: 'boolean' }])),
  property_matching_version: { type: 'integer', enum: [1, 2], description: 'Property matching rules: 1 (PostHog today) or 2.' },
});

/** Routes of the projects resource. */
export function projectRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: '/api/projects', scope: 'project:read',
      schema: { summary: 'List the projects the key may see', tags: TAGS, querystring: object(LIMIT_OFFSET), validatedBy: 'service' },
      async handler(ctx) {
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, rows } = await listProjects(deps.sql, ctx.auth.organizationId, ctx.auth.scopedTeams, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, rows.map((r) => serializeProject(r, r.organization_uuid))) };
      },
    },
    {
      method: 'POST', path: '/api/projects', scope: 'project:write',
      schema: { summary: 'Create a project', tags: TAGS, body: PROJECT_BODY, validatedBy: 'service' },
      async handler(ctx) {
        if (ctx.auth.scopedTeams.length > 0) throw errors.permissionDenied('API key is limited to specific projects and cannot create one.');
        const fields = parseProjectBody(ctx.body);
        const row = await createProject(deps.sql, ctx.auth.organizationId, ctx.auth.userId, { ...fields, name: fields.name ?? DEFAULT_PROJECT_NAME });
        return { status: 201, body: serializeProject(row, await organizationUuid(deps.sql, row.organization_id)) };
      },
    },
    {
      method: 'GET', path: '/api/projects/:project_id', scope: 'project:read',
      schema: { summary: 'Retrieve a project', tags: TAGS, params: projectParams(), validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: serializeProject(ctx.project, await organizationUuid(deps.sql, ctx.project.organization_id)) };
      },
    },
    {
      method: 'PATCH', path: '/api/projects/:project_id', scope: 'project:write',
      schema: { summary: 'Update a project\'s name, zone or remote-config settings', tags: TAGS, params: projectParams(), body: PROJECT_BODY, validatedBy: 'service' },
      async handler(ctx) {
        const row = await updateProject(deps.sql, ctx.project.id, parseProjectBody(ctx.body));
        return { status: 200, body: serializeProject(row, await organizationUuid(deps.sql, row.organization_id)) };
      },
    },
    {
      method: 'DELETE', path: '/api/projects/:project_id', scope: 'project:write',
      schema: { summary: 'Delete a project', description: 'The project leaves the API and every evaluation node: its API key is refused from then on.', tags: TAGS, params: projectParams(), validatedBy: 'service' },
      async handler(ctx) {
        await deleteProject(deps.sql, ctx.project.id, ctx.auth.userId);
        return { status: 204 };
      },
    },
    {
      method: 'PATCH', path: '/api/projects/:project_id/reset_token', scope: 'project:write',
      schema: {
        summary: 'Replace the project API key',
        description: 'Generates a new project API key (`phc_…`) and returns the project. The replaced key keeps working for '
          + 'SWITCHYARD_PROJECT_TOKEN_OVERLAP_SECONDS (default 300; 0 = refused at once), on the management API and on every evaluation node.',
        tags: TAGS, params: projectParams(), validatedBy: 'service',
      },
      async handler(ctx) {
        const row = await resetProjectToken(deps.sql, ctx.project.id, deps.config.projectTokenOverlapSeconds, ctx.auth.userId);
        return { status: 200, body: serializeProject(row, await organizationUuid(deps.sql, row.organization_id)) };
      },
    },
  ];
}
