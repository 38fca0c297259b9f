/**
 * `POST /api/projects/:project_id/query/` (scope `query:read`; issues 12 and 13): PostHog's query
 * endpoint. `{"query": {"kind": "ExperimentQuery", "experiment_id", "metric"}}` answers an
 * ExperimentQueryResponse; `{"kind": "ExperimentExposureQuery", "experiment_id"}` the exposures per
 * day and variant; `{"query": {"kind": "TrendsQuery", ...}}` (or an InsightVizNode around
 * one) a TrendsQueryResponse (./run.ts). Over the project's concurrent queries → 429; past the
 * deadline → 504; a client that leaves has its statements cancelled.
 */
import { errors } from '../../errors.js';
import { isJsonObject } from '../../json-shapes.js';
import { object, projectParams } from '../http/schema-parts.js';
import type { Deps, Route } from '../http/types.js';
import { QUERY_KINDS, runQuery } from './run.js';
import type { QueryGate } from './gate.js';

/**
 * The query route; queries run through `queries` (./gate.ts: their own pool, a cap per project,
 * a deadline, cancelled when the client leaves).
 */
export function queryRoutes(deps: Deps, queries: QueryGate): Route[] {
  return [{
    method: 'POST', path: '/api/projects/:project_id/query', scope: 'query:read',
    schema: {
      summary: 'Run a query: an experiment metric (ExperimentQuery), an experiment\'s exposures per day (ExperimentExposureQuery) or a trend of events (TrendsQuery)', tags: ['query'],
      params: projectParams(), validatedBy: 'service',
      body: object({
        query: {
          type: 'object',
          description: '`{kind: "ExperimentQuery", experiment_id, metric: <ExperimentMetric>, stats_config?, only_count_matured_users?}`, or `{kind: "ExperimentExposureQuery", experiment_id, start_date?, end_date?, exposure_criteria?}`, or `{kind: "TrendsQuery", series, dateRange, interval, properties, breakdownFilter, trendsFilter}`, or an InsightVizNode `{kind, source}` around one.',
          properties: { kind: { type: 'string', enum: [...QUERY_KINDS] } },
        },
      }, ['query']),
    },
    async handler(ctx) {
      const body = ctx.body;
      if (!isJsonObject(body)) throw errors.validation('Invalid data. Expected a dictionary.', null);
      if (body.query === undefined) throw errors.required('query');
      const project = ctx.project;
      return { status: 200, body: await queries.run(project.id, ctx.signal, (sql, budget) => runQuery(sql, project, body.query, budget)) };
    },
  }];
}
