/**
 * PostHog's scheduled changes resource (ScheduledChangeViewSet), for feature flags:
 * - `GET /api/projects/<id>/scheduled_changes/` (scope `feature_flag:read`): a LimitOffset page
 *   by id, filtered by `model_name` and `record_id` when given;
 * - `POST …/scheduled_changes/` (scope `feature_flag:write`): validates the body (./validate.ts),
 *   requires a live flag `record_id` of the project (else PostHog's 400 `Feature flag not found`),
 *   stores the change as the key's user and enqueues its job in the same transaction; 201;
 * - `GET …/scheduled_changes/<id>/` (scope `feature_flag:read`); `DELETE …/<id>/` (scope
 *   `feature_flag:write`, 204; a change not applied yet never will be).
 * PostHog keeps this resource from personal API keys (scope object INTERNAL); here the flag
 * scopes govern it. Without a job queue the create answers 503 `jobs_unavailable`.
 */
import type { Deps, Route } from '../http/types.js';
import { errors } from '../../errors.js';
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import { numericIdParam } from '../http/params.js';
import { LIMIT_OFFSET, NUMERIC_ID, object, projectParams, str } from '../http/schema-parts.js';
import { getFlag } from '../feature-flags/store.js';
import { parseScheduledChange } from './validate.js';
import { deleteScheduledChange, getScheduledChange, insertScheduledChange, listScheduledChanges, serializeScheduledChange } from './store.js';
import { enqueueScheduledChange } from './queue.js';

const TAGS = ['feature_flags'] as const;
const BASE = '/api/projects/:project_id/scheduled_changes';

const CREATE_BODY = object({
  record_id: str('The id of the record to change (the feature flag id).'),
  model_name: str('The kind of record: `FeatureFlag`.', { enum: ['FeatureFlag'] }),
  payload: {
    description: 'The change: `{"operation": "update_status", "value": true|false}`, `{"operation": "add_release_condition", "value": {"groups": [...]}}` '
      + 'or `{"operation": "update_variants", "value": {"variants": [...], "payloads": {...}}}`. Checked when it is applied.',
  },
  scheduled_at: str('When to apply it (ISO 8601; stored in UTC).', { format: 'date-time' }),
  is_recurring: { type: 'boolean', description: 'Must be false: schedules run once.' },
}, ['record_id', 'model_name', 'payload', 'scheduled_at']);

/** Routes of the scheduled changes resource. */
export function scheduledChangeRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: BASE, scope: 'feature_flag:read',
      schema: {
        summary: 'List scheduled changes', tags: TAGS, params: projectParams(), validatedBy: 'service',
        querystring: object({ ...LIMIT_OFFSET, model_name: str('Only changes of this model.'), record_id: str('Only changes of this record.') }),
      },
      async handler(ctx) {
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, rows } = await listScheduledChanges(deps.sql, ctx.project.id,
          { modelName: ctx.query.get('model_name'), recordId: ctx.query.get('record_id') }, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, rows.map(serializeScheduledChange)) };
      },
    },
    {
      method: 'POST', path: BASE, scope: 'feature_flag:write',
      schema: { summary: 'Schedule a change of a feature flag', tags: TAGS, params: projectParams(), body: CREATE_BODY, validatedBy: 'service' },
      async handler(ctx) {
        const input = parseScheduledChange(ctx.body);
        const jobs = deps.jobs;
        if (!jobs) throw errors.unavailable('jobs_unavailable', 'This control plane runs no job queue.');
        const row = await deps.sql.begin(async (tx) => {
          const id = /^\d{1,15}$/.test(input.record_id) ? Number(input.record_id) : null;
          const flag = id === null ? null : await getFlag(tx, ctx.project.id, id);
          if (!flag || flag.deleted) throw errors.validation('Feature flag not found', null, 'invalid');
          const created = await insertScheduledChange(tx, ctx.project.id, ctx.auth.userId, ctx.project.timezone, input);
          await enqueueScheduledChange(jobs, tx, created.id, input.scheduled_at);
          return created;
        });
        return { status: 201, body: serializeScheduledChange(row) };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, scope: 'feature_flag:read',
      schema: { summary: 'Retrieve a scheduled change', tags: TAGS, params: projectParams({ id: NUMERIC_ID }), validatedBy: 'service' },
      async handler(ctx) {
        const row = await getScheduledChange(deps.sql, ctx.project.id, numericIdParam(ctx));
        if (!row) throw errors.notFound();
        return { status: 200, body: serializeScheduledChange(row) };
      },
    },
    {
      method: 'DELETE', path: `${BASE}/:id`, scope: 'feature_flag:write',
      schema: { summary: 'Delete a scheduled change', tags: TAGS, params: projectParams({ id: NUMERIC_ID }), validatedBy: 'service' },
      async handler(ctx) {
        if (!(await deleteScheduledChange(deps.sql, ctx.project.id, numericIdParam(ctx)))) throw errors.notFound();
        return { status: 204 };
      },
    },
  ];
}
