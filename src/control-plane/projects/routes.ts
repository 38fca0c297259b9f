/**
 * `GET /api/projects/` and `GET /api/projects/<id>/` (spec §5 rule 3): the projects the key may
 * see — its organization's, narrowed to its scoped projects. Scope `project:read`.
 * `PATCH /api/projects/<id>/` (scope `project:write`) sets the remote-config settings
 * (PROJECT_SETTING_KEYS: booleans as PostHog's team fields, and `property_matching_version` 1 or
 * 2); other fields are read-only here and ignored as DRF ignores read-only fields (`api_token`
 * among them, as in PostHog's team serializer); a value of the wrong type is 400 with `attr`.
 * `PATCH /api/projects/<id>/reset_token/` (scope `project:write`; PostHog's ProjectViewSet
 * `reset_token` action) replaces the project API key with a new `phc_…` key and answers the
 * project; the replaced key keeps working for `config.projectTokenOverlapSeconds`
 * (projects/store.ts `resetProjectToken`). The body, if any, is ignored.
 */
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import type { Deps, Route } from '../http/types.js';
import { errors } from '../../errors.js';
import { PROJECT_BOOLEAN_SETTING_KEYS, type ProjectSettings } from '../../contract/entities.js';
import { LIMIT_OFFSET, object, projectParams } from '../http/schema-parts.js';
import { listProjects, organizationUuid, resetProjectToken, serializeProject, updateProjectSettings } from './store.js';

/** The settings in a PATCH body. @throws ApiError 400 for a body that is not an object or a non-boolean setting. */
function parseSettings(body: unknown): Partial<ProjectSettings> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw errors.validation('Expected an object.', null, 'parse_error');
  const out: Partial<ProjectSettings> = {};
  for (const k of PROJECT_BOOLEAN_SETTING_KEYS) {
    const v = (body as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw errors.validation('Must be a valid boolean.', k, 'invalid');
    out[k] = v;
  }
  const version = (body as Record<string, unknown>).property_matching_version;
  if (version !== undefined) {
    if (version !== 1 && version !== 2) throw errors.validation('"property_matching_version" must be 1 or 2.', 'property_matching_version', 'invalid_choice');
    out.property_matching_version = version;
  }
  return out;
}

const TAGS = ['projects'] as const;
/** PATCH body: the remote-config settings. */
const SETTINGS_BODY = object({
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
      method: 'GET', path: '/api/projects/:project_id', scope: 'project:read',
      schema: { summary: 'Retrieve a project', tags: TAGS, params: projectParams(), validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: serializeProject(ctx.project, await organizationUuid(deps.sql, ctx.project.organization_id)) };
      },
    },
    {
      method: 'PATCH', path: '/api/projects/:project_id', scope: 'project:write',
      schema: { summary: 'Update a project\'s remote-config settings', tags: TAGS, params: projectParams(), body: SETTINGS_BODY, validatedBy: 'service' },
      async handler(ctx) {
        const row = await updateProjectSettings(deps.sql, ctx.project.id, parseSettings(ctx.body));
        return { status: 200, body: serializeProject(row, await organizationUuid(deps.sql, row.organization_id)) };
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
