/**
 * What an `ExperimentQuery` may carry besides `experiment_id` and `metric`, and what its metric
 * must be for Switchyard to compute it; checked before any statement runs.
 *
 * - `stats_config`: replaces the experiment's for this run. Known keys only (anything else is
 *   refused, naming the known keys): `method` (bayesian | frequentist), `bayesian`
 *   {ci_level, difference_type}, `frequentist` {alpha, ci_level, difference_type,
 *   sequential_testing_enabled, sequential_tuning_parameter}, `cuped` {enabled, lookback_days
 *   1–30}, `baseline_variant_key`, `difference_type`. `difference_type` is PostHog's enum name,
 *   RELATIVE or ABSOLUTE.
 * - `only_count_matured_users` (boolean): overrides, for this run, the experiment's stored
 *   setting of the same name (PostHog keeps it on the experiment only and its runner reads the
 *   experiment's; the per-query override is Switchyard's). results/query-runner.ts applies it:
 *   only users whose conversion window (retention: window end after their start event) has
 *   fully elapsed are counted.
 * - the metric: `math: "hogql"` sources must be in the subset of ./hogql-math.ts; a mean
 *   metric's `threshold` cannot be combined with winsorization bounds (PostHog's winsorized
 *   query drops the threshold without a word; Switchyard says so instead).
 */
import { type JsonObject, isJsonObject, pyType } from '../../../json-shapes.js';
import { errors } from '../../../errors.js';
import { parseHogqlMath } from './hogql-math.js';

type Obj = JsonObject;

/** Keys of a query's `stats_config` and of its sections. */
export const STATS_CONFIG_KEYS: Readonly<Record<string, readonly string[]>> = {
  '': ['method', 'bayesian', 'frequentist', 'cuped', 'baseline_variant_key', 'difference_type'],
  bayesian: ['ci_level', 'difference_type'],
  frequentist: ['alpha', 'ci_level', 'difference_type', 'sequential_testing_enabled', 'sequential_tuning_parameter'],
  cuped: ['enabled', 'lookback_days'],
};

/** Options of one experiment query. */
export interface QueryOptions {
  /** The query's stats_config, or null to use the experiment's. */
  statsConfig: Obj | null;
  /** The query's only_count_matured_users, or null to use the experiment's. */
  onlyCountMaturedUsers: boolean | null;
}

function fail(detail: string, attr: string): never {
  throw errors.validation(detail, attr);
}

function known(o: Obj, section: string, attr: string): void {
  const keys = STATS_CONFIG_KEYS[section]!;
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) fail(`Unknown key "${k}" in ${section === '' ? 'stats_config' : `stats_config.${section}`}; known keys: ${keys.join(', ')}.`, `${attr}__${k}`);
  }
}

function differenceType(v: unknown, attr: string): void {
  if (v !== undefined && v !== null && v !== 'RELATIVE' && v !== 'ABSOLUTE') fail('difference_type must be "RELATIVE" or "ABSOLUTE".', attr);
}

function probability(v: unknown, name: string, attr: string): void {
  if (v !== undefined && v !== null && (typeof v !== 'number' || !(v > 0 && v < 1))) fail(`${name} must be a number between 0 and 1.`, attr);
}

function section(s: Obj, name: string, attr: string): Obj | null {
  const v = s[name];
  if (v === undefined || v === null) return null;
  if (!isJsonObject(v)) fail(`stats_config.${name} must be an object; got ${pyType(v)}.`, `${attr}__${name}`);
  known(v, name, `${attr}__${name}`);
  return v;
}

/** Validates a query's `stats_config` (see the module doc). @throws ApiError 400. */
export function validateQueryStatsConfig(v: unknown, attr = 'stats_config'): Obj | null {
  if (v === undefined || v === null) return null;
  if (!isJsonObject(v)) fail(`stats_config must be an object; got ${pyType(v)}.`, attr);
  known(v, '', attr);
  if (v.method !== undefined && v.method !== 'bayesian' && v.method !== 'frequentist') fail('stats_config.method must be "bayesian" or "frequentist".', `${attr}__method`);
  differenceType(v.difference_type, `${attr}__difference_type`);
  if (v.baseline_variant_key !== undefined && v.baseline_variant_key !== null && typeof v.baseline_variant_key !== 'string') {
    fail('stats_config.baseline_variant_key must be a variant key.', `${attr}__baseline_variant_key`);
  }
  const bayesian = section(v, 'bayesian', attr);
  if (bayesian) {
    probability(bayesian.ci_level, 'ci_level', `${attr}__bayesian__ci_level`);
    differenceType(bayesian.difference_type, `${attr}__bayesian__difference_type`);
  }
  const frequentist = section(v, 'frequentist', attr);
  if (frequentist) {
    probability(frequentist.alpha, 'alpha', `${attr}__frequentist__alpha`);
    probability(frequentist.ci_level, 'ci_level', `${attr}__frequentist__ci_level`);
    differenceType(frequentist.difference_type, `${attr}__frequentist__difference_type`);
    const seq = frequentist.sequential_testing_enabled;
    if (seq !== undefined && seq !== null && typeof seq !== 'boolean') fail('sequential_testing_enabled must be a boolean.', `${attr}__frequentist__sequential_testing_enabled`);
    const tuning = frequentist.sequential_tuning_parameter;
    if (tuning !== undefined && tuning !== null && (typeof tuning !== 'number' || !(tuning > 0))) {
      fail('sequential_tuning_parameter must be a positive number.', `${attr}__frequentist__sequential_tuning_parameter`);
    }
  }
  const cuped = section(v, 'cuped', attr);
  if (cuped) {
    if (cuped.enabled !== undefined && cuped.enabled !== null && typeof cuped.enabled !== 'boolean') fail('cuped.enabled must be a boolean.', `${attr}__cuped__enabled`);
    const days = cuped.lookback_days;
    if (days !== undefined && days !== null && (!Number.isInteger(days) || (days as number) < 1 || (days as number) > 30)) {
      fail('cuped.lookback_days must be an integer from 1 to 30.', `${attr}__cuped__lookback_days`);
    }
  }
  return v;
}

/** The query's options (see the module doc). @throws ApiError 400. */
export function queryOptions(query: Obj): QueryOptions {
  const matured = query.only_count_matured_users;
  if (matured !== undefined && matured !== null && typeof matured !== 'boolean') fail('only_count_matured_users must be a boolean.', 'only_count_matured_users');
  return { statsConfig: validateQueryStatsConfig(query.stats_config), onlyCountMaturedUsers: typeof matured === 'boolean' ? matured : null };
}

/** The sources of a metric with their attr paths. */
function sources(metric: Obj): [unknown, string][] {
  switch (metric.metric_type) {
    case 'mean': return [[metric.source, 'metric__source']];
    case 'ratio': return [[metric.numerator, 'metric__numerator'], [metric.denominator, 'metric__denominator']];
    case 'funnel': return (Array.isArray(metric.series) ? metric.series : []).map((s, i) => [s, `metric__series__${i}`]);
    default: return [[metric.start_event, 'metric__start_event'], [metric.completion_event, 'metric__completion_event']];
  }
}

/**
 * Refuses what a validated metric asks that Switchyard cannot compute the way PostHog does
 * (see the module doc). @throws ApiError 400.
 */
export function checkComputable(metric: Obj): void {
  for (const [source, attr] of sources(metric)) {
    if (isJsonObject(source) && source.math === 'hogql') {
      if (metric.metric_type !== 'mean' && metric.metric_type !== 'ratio') fail(`math "hogql" is computed for mean and ratio metrics only.`, `${attr}__math`);
      parseHogqlMath(source.math_hogql, `${attr}__math_hogql`);
    }
  }
  if (metric.metric_type === 'mean' && metric.threshold != null && (metric.lower_bound_percentile != null || metric.upper_bound_percentile != null)) {
    fail('threshold cannot be combined with lower_bound_percentile / upper_bound_percentile: a threshold already turns each value into 0 or 1.', 'metric__threshold');
  }
}
