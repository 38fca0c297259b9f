/**
 * HTTP routes of persons (PostHog `posthog/api/person.py` PersonViewSet; scopes `person:read` /
 * `person:write`). `:id` is the numeric id or the uuid.
 *
 * | route | answer |
 * |---|---|
 * | GET /persons/ | `{results, next, previous}` (limit/offset, default 100; store.ts for filters) |
 * | GET /persons/cohorts/?person_id= | `{results: [cohort]}`: live cohorts the person is in (cohorts.ts) |
 * | GET /persons/:id/ | the person |
 * | PATCH or PUT /persons/:id/ `{properties}` | 202, properties `$set` |
 * | POST /persons/:id/update_property/ `{key, value}` | 202 |
 * | POST /persons/:id/delete_property/ `{"$unset": key}` | 201 `{success: true}` |
 * | DELETE /persons/:id/[?delete_events=true] | 202 |
 * | POST /persons/:id/split/ `{main_distinct_id? , distinct_ids_to_split?}` | 201 `{success: true}` |
 *
 * Writes are applied before the answer (writes.ts) and reach every evaluation node through the
 * change log.
 */
import { errors } from '../../errors.js';
import { isJsonObject } from '../../json-shapes.js';
import { boolField } from '../http/drf-fields.js';
import { parseLimitOffset } from '../http/pages.js';
import type { Deps, Reply, RequestContext, Route } from '../http/types.js';
import { getLiveCohorts } from '../cohorts/store.js';
import { serializeCohort } from '../cohorts/service.js';
import { personCohortIds } from './cohorts.js';
import { findPerson } from './lookup.js';
import { listPersons, parsePersonListQuery, serializePersons } from './store.js';
import { deletePerson, setPersonProperties, splitPerson, unsetPersonProperty } from './writes.js';

const BASE = '/api/projects/:project_id/persons';
const TAGS = ['persons'] as const;
const LIST_PARAMS = { type: 'object', properties: { project_id: { type: 'string' } } } as const;
const PARAMS = { type: 'object', properties: { project_id: { type: 'string' }, id: { type: 'string', description: 'Numeric id or uuid.' } } } as const;
const LIST_QUERY = {
  type: 'object',
  properties: {
    search: { type: 'string', description: 'Email or name containing it, or a distinct id or uuid equal to it.' },
    distinct_id: { type: 'string', description: 'The person holding this distinct id.' },
    email: { type: 'string', description: 'Exact email.' },
    properties: { type: 'string', description: 'Person property filters, PostHog JSON.' },
    limit: { type: 'integer', minimum: 1, default: 100 },
    offset: { type: 'integer', minimum: 0, default: 0 },
  },
} as const;
const PROPERTIES_BODY = { type: 'object', properties: { properties: { type: 'object' } }, required: ['properties'] } as const;

/** `url` with `offset` and `limit` set (PostHog `format_query_params_absolute_url`). */
function pageUrl(url: URL, offset: number, limit: number): string {
  const u = new URL(url);
  u.searchParams.set('offset', String(offset));
  u.searchParams.set('limit', String(limit));
  return u.toString();
}

function body(ctx: RequestContext): Record<string, unknown> {
  if (ctx.body === undefined) return {};
  if (!isJsonObject(ctx.body)) throw errors.validation('Invalid data. Expected a dictionary.', 'non_field_errors', 'invalid');
  return ctx.body;
}

/** Routes of the persons resource. */
export function personRoutes(deps: Deps): Route[] {
  const update = async (ctx: RequestContext): Promise<Reply> => {
    const b = body(ctx);
    if (b.properties === undefined || b.properties === null) throw errors.required('properties');
    await setPersonProperties(deps.sql, ctx.project.id, ctx.params.id ?? '', b.properties);
    return { status: 202 };
  };
  const s = (summary: string, extra: Record<string, unknown> = {}) => ({ summary, tags: TAGS, params: PARAMS, validatedBy: 'service' as const, ...extra });
  return [
    {
      method: 'GET', path: BASE, scope: 'person:read',
      schema: { summary: 'List persons', tags: TAGS, params: LIST_PARAMS, querystring: LIST_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        const q = parsePersonListQuery(ctx.query);
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { results, more } = await listPersons(deps.sql, ctx.project.id, q, limit, offset);
        return {
          status: 200,
          body: { results, next: more ? pageUrl(ctx.url, offset + limit, limit) : null, previous: offset - limit >= 0 ? pageUrl(ctx.url, offset - limit, limit) : null },
        };
      },
    },
    {
      // PostHog's `cohorts` action asks person:read and cohort:read.
      method: 'GET', path: `${BASE}/cohorts`, scope: 'person:read', alsoScopes: ['cohort:read'],
      schema: {
        summary: 'Cohorts a person belongs to', tags: TAGS, params: LIST_PARAMS, validatedBy: 'service',
        querystring: { type: 'object', properties: { person_id: { type: 'string', description: 'Numeric id or uuid of the person.' } }, required: ['person_id'] },
      },
      async handler(ctx) {
        const raw = ctx.query.get('person_id')?.trim() ?? '';
        if (raw === '') throw errors.required('person_id');
        const person = await findPerson(deps.sql, ctx.project.id, raw);
        if (!person) throw errors.notFound();
        const rows = await getLiveCohorts(deps.sql, ctx.project.id, await personCohortIds(deps.sql, ctx.project.id, person));
        return { status: 200, body: { results: rows.map(serializeCohort) } };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, scope: 'person:read', schema: s('Retrieve a person'),
      async handler(ctx) {
        const person = await findPerson(deps.sql, ctx.project.id, ctx.params.id ?? '');
        if (!person) throw errors.notFound();
        return { status: 200, body: (await serializePersons(deps.sql, [person]))[0] };
      },
    },
    { method: 'PATCH', path: `${BASE}/:id`, scope: 'person:write', schema: s('Set person properties ($set)', { body: PROPERTIES_BODY }), handler: update },
    { method: 'PUT', path: `${BASE}/:id`, scope: 'person:write', schema: s('Set person properties ($set; same as PATCH)', { body: PROPERTIES_BODY }), handler: update },
    {
      method: 'POST', path: `${BASE}/:id/update_property`, scope: 'person:write',
      schema: s('Set one person property', { body: { type: 'object', properties: { key: { type: 'string' }, value: {} }, required: ['key', 'value'] } }),
      async handler(ctx) {
        const b = body(ctx);
        if (!('value' in b)) throw errors.required('value');
        if (b.key === undefined || b.key === null) throw errors.required('key');
        if (typeof b.key !== 'string' || b.key === '') throw errors.validation('Not a valid string.', 'key');
        await setPersonProperties(deps.sql, ctx.project.id, ctx.params.id ?? '', { [b.key]: b.value });
        return { status: 202 };
      },
    },
    {
      method: 'POST', path: `${BASE}/:id/delete_property`, scope: 'person:write',
      schema: s('Remove one person property ($unset)', { body: { type: 'object', properties: { $unset: { type: 'string' } }, required: ['$unset'] } }),
      async handler(ctx) {
        const key = body(ctx).$unset;
        if (key === undefined || key === null) throw errors.required('$unset');
        if (typeof key !== 'string' || key === '') throw errors.validation('Not a valid string.', '$unset');
        await unsetPersonProperty(deps.sql, ctx.project.id, ctx.params.id ?? '', key);
        return { status: 201, body: { success: true } };
      },
    },
    {
      method: 'DELETE', path: `${BASE}/:id`, scope: 'person:write',
      schema: s('Delete a person (and, with delete_events=true, its events)', {
        querystring: { type: 'object', properties: { delete_events: { type: 'boolean', default: false } } },
      }),
      async handler(ctx) {
        const raw = ctx.query.get('delete_events');
        // PostHog checks only that the parameter is present; an explicit false value is honoured here.
        const withEvents = raw !== null && (raw === '' || boolField(raw, 'delete_events') === true);
        await deletePerson(deps.sql, ctx.project.id, ctx.params.id ?? '', withEvents);
        return { status: 202 };
      },
    },
    {
      method: 'POST', path: `${BASE}/:id/split`, scope: 'person:write',
      schema: s('Split distinct ids off a person, each onto a new person', {
        body: { type: 'object', properties: { main_distinct_id: { type: ['string', 'null'] }, distinct_ids_to_split: { type: ['array', 'null'], items: { type: 'string' } } } },
      }),
      async handler(ctx) {
        await splitPerson(deps.sql, ctx.project.id, ctx.params.id ?? '', body(ctx));
        return { status: 201, body: { success: true } };
      },
    },
  ];
}
