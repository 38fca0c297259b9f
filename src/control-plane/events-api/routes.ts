/**
 * HTTP routes of raw events (PostHog `posthog/api/event.py` EventViewSet; scope `query:read`,
 * PostHog's `scope_object = "query"`):
 *
 * | route | answer |
 * |---|---|
 * | GET /api/projects/:project_id/events/ | `{next, results}`, newest first; `next` is absolute, null on the last page (list-query.ts) |
 * | GET /api/projects/:project_id/events/:id/ | one event; 400 `Invalid UUID`, 404 `No events exist for event UUID <id>` |
 */
import { errors } from '../../errors.js';
import type { Deps, Route } from '../http/types.js';
import { nextEventsUrl, parseEventListQuery, UUID_RE } from './list-query.js';
import { getEvent, listEvents } from './store.js';

const BASE = '/api/projects/:project_id/events';
const TAGS = ['events'] as const;
const PROJECT_PARAMS = { type: 'object', properties: { project_id: { type: 'string' } } } as const;
const EVENT_PARAMS = { type: 'object', properties: { project_id: { type: 'string' }, id: { type: 'string', format: 'uuid' } } } as const;
const LIST_QUERY = {
  type: 'object',
  properties: {
    event: { type: 'string', description: 'Only events of this name.' },
    distinct_id: { type: 'string', description: 'Only events of this distinct id.' },
    person_id: { type: 'string', description: 'Only events of this person (numeric id or uuid), including persons merged into it.' },
    properties: { type: 'string', description: 'Event property filters, PostHog JSON (a list, or an AND/OR group).' },
    after: { type: 'string', format: 'date-time', description: 'Only events strictly after this instant.' },
    before: { type: 'string', format: 'date-time', description: 'Only events strictly before this instant.' },
    before_uuid: { type: 'string', format: 'uuid', description: 'Cursor tie-break set by the `next` link.' },
    limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 100 },
  },
} as const;

/** Routes of the events resource. */
export function eventRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: BASE, scope: 'query:read',
      schema: { summary: 'List events, newest first', tags: TAGS, params: PROJECT_PARAMS, querystring: LIST_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        const q = parseEventListQuery(ctx.query);
        const { results, more } = await listEvents(deps.sql, ctx.project.id, q);
        const last = results[results.length - 1];
        return { status: 200, body: { next: more && last ? nextEventsUrl(ctx.url, last.timestamp, last.id) : null, results } };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, scope: 'query:read',
      schema: { summary: 'Retrieve an event by uuid', tags: TAGS, params: EVENT_PARAMS, validatedBy: 'service' },
      async handler(ctx) {
        const id = ctx.params.id ?? '';
        if (!UUID_RE.test(id)) throw errors.validation('Invalid UUID', null, 'invalid');
        const event = await getEvent(deps.sql, ctx.project.id, id.toLowerCase());
        if (!event) throw errors.notFound(`No events exist for event UUID ${id}`);
        return { status: 200, body: event };
      },
    },
  ];
}
