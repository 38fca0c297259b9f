/**
 * HTTP routes of experiments (spec/API.md §4.1), holdouts and saved metrics (research
 * posthog-management-api.md §3.10–§3.11):
 *
 * | route | scope |
 * |---|---|
 * | GET /experiments (E1), GET /experiments/:id (E3), GET /experiments/requires_flag_implementation (E11) | experiment:read |
 * | POST /experiments (E2), PATCH/PUT /experiments/:id (E4), DELETE (E5 → 405), POST …/create_exposure_cohort_for_experiment (E6), POST …/duplicate (E7) | experiment:write |
 * | POST …/recalculate_timeseries (E8) | experiment:write |; GET …/timeseries_results (E9) | experiment:read |
 * | GET /experiments/eligible_feature_flags (E10) | feature_flag:read |
 * | /experiment_holdouts (list, create, retrieve, update, DELETE → 204) | experiment_holdout:read / :write |
 * | /experiment_saved_metrics (list, create, retrieve, update, DELETE → 204) | experiment_saved_metric:read / :write |
 *
 * Holdouts and saved metrics use PostHog's current scope objects (`experiment_holdout`,
 * `experiment_saved_metric`), which personal keys list separately from `experiment`.
 */
import { errors } from '../../errors.js';
import { pageEnvelope, parseLimitOffset } from '../http/pages.js';
import { numericIdParam } from '../http/params.js';
import { crudRoutes } from '../http/crud-routes.js';
import { LIMIT_OFFSET, object, projectParams, str } from '../http/schema-parts.js';
import type { Deps, JsonSchema, Reply, RequestContext, Route } from '../http/types.js';
import { FeatureFlagService } from '../feature-flags/service.js';
import { parseFlagListQuery } from '../feature-flags/list-query.js';
import { FLAG_LIST_QUERY } from '../feature-flags/schemas.js';
import { CohortService } from '../cohorts/service.js';
import { ExperimentService } from './service.js';
import { parseExperimentListQuery } from './list-query.js';
import { HoldoutService } from './holdouts.js';
import { SavedMetricService } from './saved-metrics.js';
import { TimeseriesService } from './timeseries/service.js';

const P = '/api/projects/:project_id';
const LIST = projectParams();
const ONE = projectParams({ id: str('Numeric id.') });
/** E10's default and largest page (research §3.8). */
const ELIGIBLE_DEFAULT_LIMIT = 20;
const ELIGIBLE_MAX_LIMIT = 100;

const EXPERIMENT_BODY: JsonSchema = object({
  name: str('Name (required on create, at most 400 characters).'),
  description: { type: ['string', 'null'] },
  feature_flag_key: str('Key of the flag to use: an existing multivariate flag whose first variant is `control`, or a new key (a flag is created).'),
  start_date: { type: ['string', 'null'], format: 'date-time', description: 'Setting it launches the experiment (the flag is activated).' },
  end_date: { type: ['string', 'null'], format: 'date-time', description: 'Setting it stops the experiment (the flag is left as it is).' },
  holdout_id: { type: ['integer', 'null'] },
  parameters: { type: ['object', 'null'], description: '`feature_flag_variants` (≤ 20, must include `control`), `aggregation_group_type_index`, `rollout_percentage`, `custom_exposure_filter`, …' },
  saved_metrics_ids: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' }, metadata: { type: 'object' } } } },
  filters: { type: 'object' },
  archived: { type: 'boolean' },
  deleted: { type: 'boolean', description: 'Soft delete or restore (DELETE is refused with 405).' },
  type: { type: 'string', enum: ['product', 'web'] },
  exposure_criteria: { type: ['object', 'null'] },
  metrics: { type: 'array', items: { type: 'object', description: 'An ExperimentMetric (mean, funnel, ratio, retention).' } },
  metrics_secondary: { type: 'array', items: { type: 'object' } },
  stats_config: { type: ['object', 'null'], description: '`{method: "bayesian"|"frequentist", …}`' },
  only_count_matured_users: { type: 'boolean', description: 'Count only users whose conversion (retention) window has elapsed (default false); a query may override it.' },
  conclusion: { type: ['string', 'null'], enum: ['won', 'lost', 'inconclusive', 'stopped_early', 'invalid', null] },
  conclusion_comment: { type: ['string', 'null'] },
  primary_metrics_ordered_uuids: { type: ['array', 'null'], items: { type: 'string' } },
  secondary_metrics_ordered_uuids: { type: ['array', 'null'], items: { type: 'string' } },
});

const HOLDOUT_BODY: JsonSchema = object({
  name: str('Name (required on create).'),
  description: { type: ['string', 'null'] },
  filters: { type: 'array', items: { type: 'object', properties: { properties: { type: 'array' }, rollout_percentage: { type: 'number', minimum: 0, maximum: 100 } } } },
});

const SAVED_METRIC_BODY: JsonSchema = object({
  name: str('Unique within the project (case-insensitively).'),
  description: { type: ['string', 'null'] },
  query: { type: 'object', description: 'An ExperimentMetric; its uuid is assigned by the server.' },
  tags: { type: 'array', items: { type: 'string' } },
});

/** Every route of experiments, holdouts and saved metrics. */
export function experimentRoutes(deps: Deps): Route[] {
  const flags = new FeatureFlagService(deps.sql);
  const experiments = new ExperimentService(deps.sql, flags, new CohortService(deps.sql, deps.log));
  const timeseries = new TimeseriesService(deps.sql, deps.jobs);
  const E = `${P}/experiments`;
  const updateExperiment = async (ctx: RequestContext): Promise<Reply> =>
    ({ status: 200, body: await experiments.update(ctx.project.id, ctx.auth.userId, numericIdParam(ctx), ctx.body) });
  const tags = ['experiments'] as const;
  return [
    ...crudRoutes({
      collection: 'experiment_holdouts', scopeObject: 'experiment_holdout', noun: 'holdout', nouns: 'holdouts', body: HOLDOUT_BODY,
      updateNote: " (its experiments' flags follow)", deleteNote: " (its experiments' flags lose it)",
    }, new HoldoutService(deps.sql, flags)),
    ...crudRoutes({
      collection: 'experiment_saved_metrics', scopeObject: 'experiment_saved_metric', noun: 'saved metric', nouns: 'saved metrics', body: SAVED_METRIC_BODY,
    }, new SavedMetricService(deps.sql)),
    {
      method: 'GET', path: E, scope: 'experiment:read',
      schema: {
        summary: 'List experiments (E1)', tags, params: LIST, validatedBy: 'service',
        querystring: object({
          ...LIMIT_OFFSET, status: str('draft, running, complete (stopped), paused or all.'), archived: str('`true`: archived only; otherwise not archived.'),
          search: str('Substring of the name.'), created_by_id: str('Creator user id.'),
          order: str('created_at, created_by, updated_at, name, start_date, end_date, duration or status; `-` for descending.'),
        }),
      },
      async handler(ctx) {
        const q = parseExperimentListQuery(ctx.query);
        const { limit, offset } = parseLimitOffset(ctx.query);
        const { count, results } = await experiments.list(ctx.project.id, q, limit, offset);
        return { status: 200, body: pageEnvelope(ctx.url, count, limit, offset, results) };
      },
    },
    {
      method: 'POST', path: E, scope: 'experiment:write',
      schema: { summary: 'Create an experiment (E2)', tags, params: LIST, body: EXPERIMENT_BODY, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 201, body: await experiments.create(ctx.project.id, ctx.auth.userId, ctx.body) };
      },
    },
    {
      method: 'GET', path: `${E}/eligible_feature_flags`, scope: 'feature_flag:read',
      schema: { summary: 'Flags an experiment may use (E10)', tags, params: LIST, querystring: FLAG_LIST_QUERY, validatedBy: 'service' },
      async handler(ctx) {
        const raw = { limit: ctx.query.get('limit'), offset: ctx.query.get('offset') };
        if ((raw.limit !== null && !/^\d+$/.test(raw.limit)) || (raw.offset !== null && !/^\d+$/.test(raw.offset))) {
          return { status: 400, body: { error: 'Invalid limit or offset' } };
        }
        const limit = Math.min(Math.max(raw.limit === null ? ELIGIBLE_DEFAULT_LIMIT : Number(raw.limit), 1), ELIGIBLE_MAX_LIMIT);
        const offset = raw.offset === null ? 0 : Number(raw.offset);
        return { status: 200, body: await experiments.eligibleFlags(ctx.project.id, parseFlagListQuery(ctx.query), limit, offset) };
      },
    },
    {
      method: 'GET', path: `${E}/requires_flag_implementation`, scope: 'experiment:read',
      schema: { summary: 'Whether recent events lack $feature/ properties (E11)', tags, params: LIST, querystring: object({ events: str('JSON list of `{id: <event name>}`.') }), validatedBy: 'service' },
      async handler(ctx) {
        let events: unknown = [];
        const raw = ctx.query.get('events');
        if (raw !== null && raw !== '') {
          try { events = JSON.parse(raw); } catch { throw errors.validation('events must be a JSON list.', 'events'); }
        }
        if (!Array.isArray(events)) throw errors.validation('events must be a JSON list.', 'events');
        const names = events.map((e) => (typeof e === 'string' ? e : (e as { id?: unknown })?.id)).filter((n): n is string => typeof n === 'string');
        return { status: 200, body: await experiments.requiresFlagImplementation(ctx.project.id, names) };
      },
    },
    {
      method: 'GET', path: `${E}/:id`, scope: 'experiment:read',
      schema: { summary: 'Retrieve an experiment (E3)', tags, params: ONE, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 200, body: await experiments.get(ctx.project.id, numericIdParam(ctx)) };
      },
    },
    { method: 'PATCH', path: `${E}/:id`, scope: 'experiment:write', handler: updateExperiment, schema: { summary: 'Update, launch, stop, archive, soft-delete or restore an experiment (E4)', tags, params: ONE, body: EXPERIMENT_BODY, validatedBy: 'service' } },
    { method: 'PUT', path: `${E}/:id`, scope: 'experiment:write', handler: updateExperiment, schema: { summary: 'Update an experiment (same as PATCH)', tags, params: ONE, body: EXPERIMENT_BODY, validatedBy: 'service' } },
    {
      method: 'DELETE', path: `${E}/:id`, scope: 'experiment:write',
      schema: { summary: 'Refused with 405: soft-delete with PATCH {"deleted": true} (E5)', tags, params: ONE, validatedBy: 'service' },
      async handler() { throw errors.deleteForbidden(); },
    },
    {
      method: 'POST', path: `${E}/:id/create_exposure_cohort_for_experiment`, scope: 'experiment:write',
      schema: { summary: "Create a cohort of the users exposed to the experiment (E6)", tags, params: ONE, validatedBy: 'service' },
      async handler(ctx) {
        return { status: 201, body: await experiments.createExposureCohort(ctx.project.id, ctx.auth.userId, numericIdParam(ctx)) };
      },
    },
    {
      method: 'POST', path: `${E}/:id/recalculate_timeseries`, scope: 'experiment:write',
      schema: {
        summary: 'Recalculate the daily cumulative results of one metric (E8)', tags, params: ONE, validatedBy: 'service',
        body: object({ metric: { type: 'object', description: 'The full metric, with its uuid.' }, fingerprint: str('The metric\'s fingerprint.') }, ['metric', 'fingerprint']),
      },
      async handler(ctx) {
        return timeseries.recalculate(ctx.project.id, numericIdParam(ctx), ctx.body);
      },
    },
    {
      method: 'GET', path: `${E}/:id/timeseries_results`, scope: 'experiment:read',
      schema: {
        summary: 'Daily cumulative results of one metric (E9)', tags, params: ONE, validatedBy: 'service',
        querystring: object({ metric_uuid: str('The metric\'s uuid.'), fingerprint: str('The metric\'s fingerprint.') }, ['metric_uuid', 'fingerprint']),
      },
      async handler(ctx) {
        return { status: 200, body: await timeseries.results(ctx.project.id, numericIdParam(ctx), ctx.query) };
      },
    },
    {
      method: 'POST', path: `${E}/:id/duplicate`, scope: 'experiment:write',
      schema: { summary: 'Duplicate an experiment as a draft (E7)', tags, params: ONE, body: object({ feature_flag_key: str('Flag for the copy (default: the same flag).'), name: str('Name of the copy.') }), validatedBy: 'service' },
      async handler(ctx) {
        return { status: 201, body: await experiments.duplicate(ctx.project.id, ctx.auth.userId, numericIdParam(ctx), ctx.body) };
      },
    },

  ];
}
