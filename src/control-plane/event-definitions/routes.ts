/**
 * HTTP routes of event definitions (spec/API.md §4.3 D1–D5; research §4):
 *
 * | route | scope |
 * |---|---|
 * | GET /event_definitions (D1), GET /event_definitions/by_name, GET /:id (D2), GET /:id/metrics (D5) | event_definition:read |
 * | PATCH /:id (D3; PUT behaves the same), DELETE /:id (D4 → 204) | event_definition:write |
 */
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import type { Deps, Reply, RequestContext, Route } from '../http/types.js';
import { parseDefinitionListQuery } from './list-query.js';
import { EventDefinitionService } from './service.js';
import { BY_NAME_QUERY, DEFINITION_BODY, DEFINITION_LIST_QUERY, DEFINITION_PARAMS, DEFINITIONS_PARAMS } from './schemas.js';

const BASE = '/api/projects/:project_id/event_definitions';
const TAGS = ['event_definitions'] as const;

/** Routes of the event-definitions resource. */
export function eventDefinitionRoutes(deps: Deps): Route[] {
  const service = new EventDefinitionService(deps.sql);
  const update = async (ctx: RequestContext): Promise<Reply> => ({
    status: 200,
    body: await service.update(ctx.project.id, ctx.auth.organizationId, ctx.auth.userId, ctx.params.id ?? '', ctx.body),
  });
  return [
    {
      method: 'GET', path: BASE, scope: 'event_definition:read',
      schema: { summary: 'List event definitions (D1)', tags: TAGS, params: DEFINITIONS_PARAMS, querystring: DEFINITION_LIST_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        const q = parseDefinitionListQuery(ctx.query);
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, results } = await service.list(ctx.project.id, q, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
      },
    },
    {
      method: 'GET', path: `${BASE}/by_name`, scope: 'event_definition:read',
      schema: { summary: 'Retrieve an event definition by name', tags: TAGS, params: DEFINITIONS_PARAMS, querystring: BY_NAME_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: await service.getByName(ctx.project.id, ctx.query.get('name')) };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, scope: 'event_definition:read',
      schema: { summary: 'Retrieve an event definition (D2)', tags: TAGS, params: DEFINITION_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: await service.get(ctx.project.id, ctx.params.id ?? '') };
      },
    },
    {
      method: 'PATCH', path: `${BASE}/:id`, scope: 'event_definition:write', handler: update,
      schema: { summary: 'Update an event definition (D3)', tags: TAGS, params: DEFINITION_PARAMS, body: DEFINITION_BODY, validatedBy: 'service' },
    },
    {
      method: 'PUT', path: `${BASE}/:id`, scope: 'event_definition:write', handler: update,
      schema: { summary: 'Update an event definition (same as PATCH)', tags: TAGS, params: DEFINITION_PARAMS, body: DEFINITION_BODY, validatedBy: 'service' },
    },
    {
      method: 'DELETE', path: `${BASE}/:id`, scope: 'event_definition:write',
      schema: { summary: 'Delete an event definition (D4)', tags: TAGS, params: DEFINITION_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        await service.delete(ctx.project.id, ctx.auth.userId, ctx.params.id ?? '');
        return { status: 204 };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id/metrics`, scope: 'event_definition:read',
      schema: { summary: 'Volume metrics of an event definition (D5)', tags: TAGS, params: DEFINITION_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: await service.metrics(ctx.project.id, ctx.params.id ?? '') };
      },
    },
  ];
}
