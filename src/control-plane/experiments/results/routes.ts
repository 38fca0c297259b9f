/**
 * `POST /api/projects/:project_id/query/` (scope `query:read`; issue 12 item 1): PostHog's query
 * endpoint for `{"query": {"kind": "ExperimentQuery", "experiment_id": N, "metric": {...}}}`,
 * answered with an `ExperimentQueryResponse` (query-runner.ts).
 */
import { errors } from '../../../errors.js';
import { object, projectParams } from '../../http/schema-parts.js';
import type { Deps, Route } from '../../http/types.js';
import { runExperimentQuery } from './query-runner.js';

/** The query route. */
export function queryRoutes(deps: Deps): Route[] {
  return [{
    method: 'POST', path: '/api/projects/:project_id/query', scope: 'query:read',
    schema: {
      summary: 'Run a query: ExperimentQuery computes one metric of an experiment from captured events', tags: ['query'],
      params: projectParams(), validatedBy: 'service',
      body: object({
        query: {
          type: 'object', description: '`{kind: "ExperimentQuery", experiment_id, metric: <ExperimentMetric>}`',
          properties: { kind: { type: 'string', enum: ['ExperimentQuery'] }, experiment_id: { type: 'integer' }, metric: { type: 'object' } },
        },
      }, ['query']),
    },
    async handler(ctx) {
      const body = ctx.body as { query?: unknown } | undefined;
      if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.validation('Invalid data. Expected a dictionary.', null);
      if (body.query === undefined) throw errors.required('query');
      return { status: 200, body: await runExperimentQuery(deps.sql, ctx.project.id, body.query) };
    },
  }];
}
