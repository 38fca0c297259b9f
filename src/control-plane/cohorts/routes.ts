/**
 * HTTP routes of cohorts (PostHog `/api/projects/:id/cohorts/`):
 *
 * | route | scope |
 * |---|---|
 * | GET /cohorts (list: limit, offset, search), GET /cohorts/:id, GET /cohorts/:id/persons | cohort:read |
 * | POST /cohorts (JSON, or multipart with a `csv` file for a static cohort), PATCH/PUT /cohorts/:id | cohort:write |
 * | DELETE /cohorts/:id → 405, no body (soft delete is PATCH `{"deleted": true}`) | cohort:write |
 */
import { errors } from '../../errors.js';
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import { numericIdParam } from '../http/params.js';
import { LIMIT_OFFSET, object, projectParams, str } from '../http/schema-parts.js';
import type { Deps, JsonSchema, Reply, RequestContext, Route } from '../http/types.js';
import { CohortService } from './service.js';

const BASE = '/api/projects/:project_id/cohorts';
const TAGS = ['cohorts'] as const;
const LIST_PARAMS = projectParams();
const ONE_PARAMS = projectParams({ id: str('Cohort id.') });

/** A cohort body (JSON, or multipart form fields with a `csv` file). */
const COHORT_BODY: JsonSchema = object({
  name: str('Name (at most 400 characters).'),
  description: str('Free text.'),
  is_static: { type: 'boolean', description: 'A static cohort: members come from uploads, not from filters. Fixed at creation.' },
  filters: {
    type: 'object',
    description: '`{properties: {type: "AND"|"OR", values: [...]}}`: person property filters, `{type: "cohort", value: <id>}` and '
      + '`{type: "behavioral", value: "performed_event"|"performed_event_multiple", key: <event>, time_value, time_interval | explicit_datetime, event_filters}`.',
  },
  groups: { type: 'array', description: 'Legacy filter groups (stored as given).' },
  deleted: { type: 'boolean', description: 'Soft delete or restore.' },
  csv: { description: 'Multipart only: a CSV file of distinct ids (a `distinct_id` column, else the first column); adds members to a static cohort.' },
});

/** Routes of the cohorts resource. */
export function cohortRoutes(deps: Deps): Route[] {
  const service = new CohortService(deps.sql, deps.log);
  const update = async (ctx: RequestContext): Promise<Reply> => ({ status: 200, body: await service.update(ctx.project.id, ctx.auth.userId, numericIdParam(ctx), ctx.body) });
  return [
    {
      method: 'GET', path: BASE, scope: 'cohort:read',
      schema: { summary: 'List cohorts', tags: TAGS, params: LIST_PARAMS, querystring: object({ ...LIMIT_OFFSET, search: str('Substring of the name.') }), validatedBy: 'service' },
      async handler(ctx) {
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, results } = await service.list(ctx.project.id, ctx.query.get('search'), limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
      },
    },
    {
      method: 'POST', path: BASE, scope: 'cohort:write',
      schema: { summary: 'Create a cohort (dynamic, or static with a CSV upload)', tags: TAGS, params: LIST_PARAMS, body: COHORT_BODY, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 201, body: await service.create(ctx.project.id, ctx.auth.userId, ctx.body) };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, scope: 'cohort:read',
      schema: { summary: 'Retrieve a cohort', tags: TAGS, params: ONE_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: await service.get(ctx.project.id, numericIdParam(ctx)) };
      },
    },
    {
      method: 'PATCH', path: `${BASE}/:id`, scope: 'cohort:write', handler: update,
      schema: { summary: 'Update a cohort; a CSV adds members to a static cohort', tags: TAGS, params: ONE_PARAMS, body: COHORT_BODY, validatedBy: 'service' },
    },
    {
      method: 'PUT', path: `${BASE}/:id`, scope: 'cohort:write', handler: update,
      schema: { summary: 'Update a cohort (same as PATCH)', tags: TAGS, params: ONE_PARAMS, body: COHORT_BODY, validatedBy: 'service' },
    },
    {
      method: 'DELETE', path: `${BASE}/:id`, scope: 'cohort:write',
      schema: { summary: 'Refused with 405: soft-delete with PATCH {"deleted": true}', tags: TAGS, params: ONE_PARAMS, validatedBy: 'service' },
      async handler() {
        throw errors.deleteForbidden();
      },
    },
    {
      method: 'GET', path: `${BASE}/:id/persons`, scope: 'cohort:read',
      schema: { summary: "A page of a static cohort's members", tags: TAGS, params: ONE_PARAMS, querystring: object(LIMIT_OFFSET), validatedBy: 'service' },
      async handler(ctx) {
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, results } = await service.persons(ctx.project.id, numericIdParam(ctx), limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
      },
    },
  ];
}
