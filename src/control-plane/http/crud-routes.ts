/**
 * The five routes of a plain project resource with hard delete (list, create, retrieve, update
 * with PATCH and PUT alike, DELETE → 204), built from its service. For resources whose rules all
 * live in the service, such as holdouts and saved metrics.
 */
import { pageEnvelope, parseLimitOffset } from './pages.js';
import { numericIdParam } from './params.js';
import { LIMIT_OFFSET, object, projectParams, str } from './schema-parts.js';
import type { JsonSchema, Reply, RequestContext, Route } from './types.js';

/** What the routes call; each method throws the resource's ApiErrors (404, 400). */
export interface CrudService {
  list(projectId: number, limit: number, offset: number): Promise<{ count: number; results: unknown[] }>;
  get(projectId: number, id: number): Promise<unknown>;
  create(projectId: number, userId: number, body: unknown): Promise<unknown>;
  update(projectId: number, userId: number, id: number, body: unknown): Promise<unknown>;
  delete(projectId: number, userId: number, id: number): Promise<void>;
}

/** How the resource is named and documented. */
export interface CrudSpec {
  /** Path after `/api/projects/:project_id/`, e.g. `experiment_holdouts`. */
  collection: string;
  /** Scope object, e.g. `experiment_holdout` (`:read` / `:write` appended). */
  scopeObject: string;
  /** Singular and plural nouns for the summaries. */
  noun: string;
  nouns: string;
  body: JsonSchema;
  /** Extra words for the update and delete summaries (what else changes). */
  updateNote?: string;
  deleteNote?: string;
}

/** The resource's routes. */
export function crudRoutes(spec: CrudSpec, service: CrudService): Route[] {
  const base = `/api/projects/:project_id/${spec.collection}`;
  const tags = [spec.collection];
  const list = projectParams();
  const one = projectParams({ id: str('Numeric id.') });
  const read = `${spec.scopeObject}:read`;
  const write = `${spec.scopeObject}:write`;
  const update = async (ctx: RequestContext): Promise<Reply> =>
    ({ status: 200, body: await service.update(ctx.project.id, ctx.auth.userId, numericIdParam(ctx), ctx.body) });
  return [
    {
      method: 'GET', path: base, scope: read,
      schema: { summary: `List ${spec.nouns}`, tags, params: list, querystring: object(LIMIT_OFFSET), validatedBy: 'service' },
      async handler(ctx) {
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, results } = await service.list(ctx.project.id, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
      },
    },
    {
      method: 'POST', path: base, scope: write,
      schema: { summary: `Create a ${spec.noun}`, tags, params: list, body: spec.body, validatedBy: 'service' },
      async handler(ctx) { return { status: 201, body: await service.create(ctx.project.id, ctx.auth.userId, ctx.body) }; },
    },
    {
      method: 'GET', path: `${base}/:id`, scope: read,
      schema: { summary: `Retrieve a ${spec.noun}`, tags, params: one, validatedBy: 'service' },
      async handler(ctx) { return { status: 200, body: await service.get(ctx.project.id, numericIdParam(ctx)) }; },
    },
    { method: 'PATCH', path: `${base}/:id`, scope: write, handler: update, schema: { summary: `Update a ${spec.noun}${spec.updateNote ?? ''}`, tags, params: one, body: spec.body, validatedBy: 'service' } },
    { method: 'PUT', path: `${base}/:id`, scope: write, handler: update, schema: { summary: `Update a ${spec.noun} (same as PATCH)`, tags, params: one, body: spec.body, validatedBy: 'service' } },
    {
      method: 'DELETE', path: `${base}/:id`, scope: write,
      schema: { summary: `Delete a ${spec.noun}${spec.deleteNote ?? ''}`, tags, params: one, validatedBy: 'service' },
      async handler(ctx) { await service.delete(ctx.project.id, ctx.auth.userId, numericIdParam(ctx)); return { status: 204 }; },
    },
  ];
}
