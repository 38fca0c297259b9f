/**
 * PostHog's query kinds Switchyard computes (`POST /api/projects/:id/query/` and insights'
 * results): `ExperimentQuery` (experiments/results/query-runner.ts), `TrendsQuery`
 * (insights/trends.ts), and `InsightVizNode` / `DataVisualizationNode` wrapping one of them in
 * `source`. Anything else answers 400 naming the kind (PostHog's HogQL, funnels and retention
 * insights, paths, … are not served).
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import type { Sql } from '../db/connect.js';
import { errors } from '../../errors.js';
import { runExperimentQuery } from '../experiments/results/query-runner.js';
import { runExperimentExposureQuery } from '../experiments/results/exposure-timeseries.js';
import { runTrendsQuery, type QueryProject } from '../insights/trends.js';
import { limitedTransaction } from './time-limit.js';
import { type QueryBudget, statementLimit } from './budget.js';

/** Query kinds {@link runQuery} answers. */
export const QUERY_KINDS: readonly string[] = ['ExperimentQuery', 'ExperimentExposureQuery', 'TrendsQuery', 'InsightVizNode'];

/** The query a wrapper node holds (InsightVizNode → its source), else the query itself. */
export function innerQuery(query: JsonObject): JsonObject {
  return (query.kind === 'InsightVizNode' || query.kind === 'DataVisualizationNode') && isJsonObject(query.source) ? query.source : query;
}

/**
 * Runs one query for `project` under `budget` (./budget.ts: per-statement limit, deadline,
 * stop signal; default: none) on `sql`, the query pool (./gate.ts). @returns the kind's
 * response (ExperimentQueryResponse, ExperimentExposureQueryResponse, TrendsQueryResponse). @throws ApiError 400 for an unknown
 * kind or an invalid query, 504 past a time limit.
 */
export async function runQuery(sql: Sql, project: QueryProject, query: unknown, budget: QueryBudget = statementLimit(0)): Promise<JsonObject> {
  if (!isJsonObject(query)) throw errors.validation('query must be an object with a "kind".', 'query');
  const inner = innerQuery(query);
  switch (inner.kind) {
    case 'ExperimentQuery': return runExperimentQuery(sql, project.id, inner, { budget }) as Promise<JsonObject>;
    case 'ExperimentExposureQuery': return runExperimentExposureQuery(sql, project.id, inner, budget);
    case 'TrendsQuery': return limitedTransaction(sql, budget, (tx) => runTrendsQuery(tx, project, inner));
    default: throw errors.validation(`Query kind ${JSON.stringify(inner.kind ?? null)} is not supported: use one of ${QUERY_KINDS.join(', ')}.`, 'query');
  }
}
