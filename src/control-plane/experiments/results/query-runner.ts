/**
 * `ExperimentQuery` (research/experiments.md §1–§4): one metric of one
 * experiment computed from the captured events — exposures (exposures.ts), per-entity values
 * (metric-values.ts), per-variant sufficient statistics, PostHog's validation failures, then the
 * statistics module — answered as PostHog's `ExperimentQueryResponse`.
 *
 * Per-variant statistics: `number_of_samples`, `sum`, `sum_squares`; funnels add `step_counts`
 * (`step_counts[i]` = entities reaching at least step i + 1); ratio and retention add
 * `denominator_sum`, `denominator_sum_squares`, `numerator_denominator_sum_product`.
 * Validation failures: `not-enough-exposures` (< 50), `not-enough-metric-data` (a funnel or
 * retention arm with sum < 5), `baseline-mean-is-zero`; when the baseline fails no variant
 * gets statistics, and a failing variant gets none either (fields null, `significant` false).
 * Arms: the baseline is `stats_config.baseline_variant_key`, else `control`, else the first
 * variant; variants follow the flag's order, zero-filled when unseen; the holdout is no arm.
 * The query may carry `stats_config` (replacing the experiment's) and `only_count_matured_users`
 * (replacing the experiment's stored setting; query-options.ts); a mean metric's `threshold` counts each entity 1 when its value reaches it,
 * else 0 (sum = sum_squares = entities reaching it), as PostHog's mean query builder.
 */
import { type JsonObject, isJsonObject } from '../../../json-shapes.js';
import type { Sql } from '../../db/connect.js';
import { errors } from '../../../errors.js';
import { sampleRatioMismatch, SRM_MIN_EXPOSURES } from '../../../stats/srm.js';
import { analyze, InputError } from '../../../stats/analyze.js';
import * as store from '../store.js';
import { validateMetric } from '../metrics.js';
import { dropImmature, materializeExposures } from './exposures.js';
import { checkComputable, queryOptions } from './query-options.js';
import { hasMerges } from '../../events/person-merges.js';
import { exposureSpan, materializeValues, windowSeconds, winsorize } from './metric-values.js';
import { limitedTransaction } from '../../query/time-limit.js';
import { type QueryBudget, statementLimit } from '../../query/budget.js';

type Obj = JsonObject;

/** Fewest exposures per arm before statistics are computed (PostHog). */
export const MIN_EXPOSURES = 50;
/** Fewest conversions per arm of a funnel or retention metric (PostHog). */
export const MIN_CONVERSIONS = 5;
/** CUPED's default lookback before the first exposure, in days (PostHog). */
export const CUPED_DEFAULT_LOOKBACK_DAYS = 14;
/** CUPED's longest lookback, in days (PostHog clamps to 1…30). */
export const CUPED_MAX_LOOKBACK_DAYS = 30;
/** Transactions one analysis is split into (the entities by hash): one per core of this machine kind. */
export const ANALYSIS_PARTITIONS = 2;

interface VariantAggregate {
  key: string; n: number; sum: number; sum_squares: number; denominator_sum: number; denominator_sum_squares: number;
  numerator_denominator_sum_product: number; step_counts?: number[];
  /** CUPED's covariate sums (mean metrics with `stats_config.cuped.enabled`). */
  covariate?: { sum: number; sum_squares: number; sum_product: number };
}

/** Options of one run. */
export interface RunOptions {
  /** Compute as of this instant (timeseries); default: the end date, else now. */
  asOf?: Date;
  /** Bounds of the analysis (query/budget.ts: per-statement limit, deadline, stop signal); absent: none. */
  budget?: QueryBudget;
}

/**
 * Runs `query` (`{kind: "ExperimentQuery", experiment_id, metric}`) for the project.
 * @throws ApiError 400 for a bad query, a draft experiment or a metric that cannot be computed; 404 for an unknown experiment;
 *   504 when a statement runs past its limit or the deadline of `opts.budget` passes.
 */
export async function runExperimentQuery(sql: Sql, projectId: number, query: unknown, opts: RunOptions = {}): Promise<Obj> {
  if (!isJsonObject(query)) throw errors.validation('query must be an object.', 'query');
  if (query.kind !== 'ExperimentQuery') throw errors.validation(`Query kind ${JSON.stringify(query.kind ?? null)} is not supported; use "ExperimentQuery".`, 'query');
  if (query.experiment_id === undefined || query.experiment_id === null) throw errors.validation('experiment_id is required', 'experiment_id');
  const id = Number(query.experiment_id);
  const experiment = Number.isSafeInteger(id) ? await store.getExperiment(sql, projectId, id) : null;
  if (!experiment || experiment.deleted) throw errors.validation(`Experiment with id ${String(query.experiment_id)} not found`, 'experiment_id', 'not_found');
  if (experiment.start_date === null) throw errors.validation('The experiment has not started: launch it (set start_date) to compute results.', 'experiment_id');
  const metric = validateMetric(query.metric, 'metric');
  checkComputable(metric);
  const options = queryOptions(query);

  const [flag] = await sql<{ key: string; filters: Obj }[]>`SELECT key, filters FROM feature_flags WHERE id = ${experiment.feature_flag_id}`;
  if (!flag) throw errors.validation('Experiment does not have a feature flag', null);
  const [project] = await sql<{ timezone: string }[]>`SELECT timezone FROM projects WHERE id = ${projectId}`;
  const variantDefs = ((flag.filters.multivariate as Obj | undefined)?.variants as Obj[] | undefined) ?? [];
  const variants = variantDefs.map((v) => String(v.key));
  const weights = new Map(variantDefs.map((v) => [String(v.key), Number(v.rollout_percentage ?? 0)]));
  if (variants.length === 0) throw errors.validation('The experiment\'s flag has no variants.', null);
  const stats = options.statsConfig ?? experiment.stats_config ?? {};
  if (options.statsConfig && typeof stats.baseline_variant_key === 'string' && !variants.includes(stats.baseline_variant_key)) {
    throw errors.validation(`stats_config.baseline_variant_key "${stats.baseline_variant_key}" is not a variant of the flag (${variants.join(', ')}).`, 'stats_config__baseline_variant_key');
  }
  const baselineKey = typeof stats.baseline_variant_key === 'string' && variants.includes(stats.baseline_variant_key) ? stats.baseline_variant_key
    : variants.includes('control') ? 'control' : variants[0]!;
  // The window ends at min(as_of, end_date); as_of defaults to the end date, else now (research §2.1).
  const asOf = opts.asOf ?? experiment.end_date ?? new Date();
  const end = experiment.end_date !== null && experiment.end_date < asOf ? experiment.end_date : asOf;
  const groupIndex = typeof flag.filters.aggregation_group_type_index === 'number' ? flag.filters.aggregation_group_type_index : null;
  const criteria = experiment.exposure_criteria ?? {};

  const winsorized = metric.metric_type === 'mean' && (metric.lower_bound_percentile != null || metric.upper_bound_percentile != null);
  const cupedConfig = isJsonObject(stats.cuped) ? stats.cuped as Obj : null;
  // only_count_matured_users (the query's, else the experiment's): windows must have elapsed by
  // now (PostHog compares with the wall clock).
  const maturedBy = (options.onlyCountMaturedUsers ?? experiment.only_count_matured_users) ? opts.asOf ?? new Date() : null;
  const threshold = metric.metric_type === 'mean' && typeof metric.threshold === 'number' ? metric.threshold : null;
  const cupedDays = metric.metric_type === 'mean' && cupedConfig?.enabled === true
    ? Math.min(CUPED_MAX_LOOKBACK_DAYS, Math.max(1, Math.round(Number(cupedConfig.lookback_days ?? CUPED_DEFAULT_LOOKBACK_DAYS)) || CUPED_DEFAULT_LOOKBACK_DAYS))
    : null;
  type Row = { variant: string; n: number; s: number; ss: number; ds: number; dss: number; p: number; cs: number; css: number; cp: number };
  type Step = { variant: string; step: number; n: number };
  // The entities are split by a hash into PARTITIONS transactions run at once (Postgres works each
  // on its own backend, so both cores); sums, counts and step counts add up across partitions.
  // Winsorization needs percentiles over every entity, so it runs as one partition.
  const partitions = winsorized ? 1 : ANALYSIS_PARTITIONS;
  const budget = opts.budget ?? statementLimit(0);
  const parts = await Promise.all(Array.from({ length: partitions }, (_, index) => limitedTransaction(sql, budget, async (tx) => {
    const merges = await hasMerges(tx, projectId);
    await materializeExposures(tx, {
      projectId, flagKey: flag.key, variants, start: experiment.start_date!, end, groupIndex, merges,
      exposureConfig: isJsonObject(criteria.exposure_config) ? criteria.exposure_config : null,
      multipleHandling: criteria.multiple_variant_handling === 'first_seen' ? 'first_seen' : 'exclude',
      partition: { index, count: partitions },
    });
    if (maturedBy && metric.metric_type !== 'retention') await dropImmature(tx, windowSeconds(metric), maturedBy);
    const span = await exposureSpan(tx);
    const values = await materializeValues(tx, {
      projectId, groupIndex, merges, span, start: experiment.start_date!, end, timezone: project?.timezone ?? 'UTC', cupedLookbackDays: cupedDays,
      maturedBy: maturedBy && metric.metric_type === 'retention' ? maturedBy : null,
    }, metric, winsorized);
    if (winsorized) {
      await winsorize(tx, (metric.lower_bound_percentile as number | null) ?? null, (metric.upper_bound_percentile as number | null) ?? null, metric.ignore_zeros === true);
    }
    // One pass over the values: sums per (variant, step reached); step is 0 outside funnels. A
    // mean metric's threshold makes each value 0 or 1 (reached or not); CUPED's product keeps the
    // raw value, as PostHog's query does.
    const value = threshold === null ? tx`value` : tx`(CASE WHEN value >= ${threshold} THEN 1 ELSE 0 END)::float8`;
    const grouped = await tx<(Row & { step: number })[]>`
      SELECT variant, step, count(*)::int AS n, COALESCE(sum(${value}), 0)::float8 AS s, COALESCE(sum(${value} * ${value}), 0)::float8 AS ss,
        COALESCE(sum(denom), 0)::float8 AS ds, COALESCE(sum(denom * denom), 0)::float8 AS dss, COALESCE(sum(value * denom), 0)::float8 AS p,
        COALESCE(sum(cov), 0)::float8 AS cs, COALESCE(sum(cov * cov), 0)::float8 AS css, COALESCE(sum(value * cov), 0)::float8 AS cp
      FROM ${values.relation} v GROUP BY variant, step`;
    const rows: Row[] = grouped.map(({ step: _step, ...r }) => r);
    const steps: Step[] = metric.metric_type === 'funnel' ? grouped.map((r) => ({ variant: r.variant, step: r.step, n: r.n })) : [];
    return { rows, steps };
  })));
  const merged = new Map<string, Row>();
  for (const r of parts.flatMap((p) => p.rows)) {
    const m = merged.get(r.variant);
    if (!m) merged.set(r.variant, { ...r });
    else { m.n += r.n; m.s += r.s; m.ss += r.ss; m.ds += r.ds; m.dss += r.dss; m.p += r.p; m.cs += r.cs; m.css += r.css; m.cp += r.cp; }
  }
  const aggregates = { rows: [...merged.values()], steps: parts.flatMap((p) => p.steps) };

  const stepCount = Array.isArray(metric.series) ? metric.series.length : 0;
  const byVariant = new Map(aggregates.rows.map((r) => [r.variant, r]));
  const arms: VariantAggregate[] = variants.map((key) => {
    const r = byVariant.get(key);
    const a: VariantAggregate = {
      key, n: r?.n ?? 0, sum: r?.s ?? 0, sum_squares: r?.ss ?? 0, denominator_sum: r?.ds ?? 0, denominator_sum_squares: r?.dss ?? 0,
      numerator_denominator_sum_product: r?.p ?? 0,
    };
    if (cupedDays !== null) a.covariate = { sum: r?.cs ?? 0, sum_squares: r?.css ?? 0, sum_product: r?.cp ?? 0 };
    if (metric.metric_type === 'funnel') {
      a.step_counts = Array.from({ length: stepCount }, (_, i) => aggregates.steps.filter((s) => s.variant === key && s.step >= i + 1).reduce((t, s) => t + s.n, 0));
    }
    return a;
  });
  return present(metric, arms, baselineKey, stats, weights);
}

/** PostHog's base statistics of one arm. */
function base(metric: Obj, a: VariantAggregate): Obj {
  const out: Obj = { key: a.key, number_of_samples: a.n, sum: a.sum, sum_squares: a.sum_squares };
  if (a.step_counts) out.step_counts = a.step_counts;
  if (a.covariate) {
    out.covariate_sum = a.covariate.sum;
    out.covariate_sum_squares = a.covariate.sum_squares;
    out.covariate_sum_product = a.covariate.sum_product;
  }
  if (metric.metric_type === 'ratio' || metric.metric_type === 'retention') {
    out.denominator_sum = a.denominator_sum;
    out.denominator_sum_squares = a.denominator_sum_squares;
    out.numerator_denominator_sum_product = a.numerator_denominator_sum_product;
  }
  return out;
}

/** The statistics module's input for one arm. */
function statisticOf(metric: Obj, a: VariantAggregate): Obj {
  switch (metric.metric_type) {
    case 'funnel': return { key: a.key, type: 'proportion', n: a.n, sum: a.sum };
    case 'ratio': case 'retention':
      return {
        key: a.key, type: 'ratio', n: a.n, numerator: { n: a.n, sum: a.sum, sum_squares: a.sum_squares },
        denominator: { n: a.n, sum: a.denominator_sum, sum_squares: a.denominator_sum_squares }, sum_of_products: a.numerator_denominator_sum_product,
      };
    default:
      if (a.covariate) {
        return {
          key: a.key, type: 'cuped', n: a.n, post: { n: a.n, sum: a.sum, sum_squares: a.sum_squares },
          pre: { n: a.n, sum: a.covariate.sum, sum_squares: a.covariate.sum_squares }, post_pre_sum_of_products: a.covariate.sum_product,
        };
      }
      return { key: a.key, n: a.n, sum: a.sum, sum_squares: a.sum_squares };
  }
}

function failures(metric: Obj, a: VariantAggregate, isBaseline: boolean): string[] {
  const out: string[] = [];
  if (a.n < MIN_EXPOSURES) out.push('not-enough-exposures');
  if ((metric.metric_type === 'funnel' || metric.metric_type === 'retention') && a.sum < MIN_CONVERSIONS) out.push('not-enough-metric-data');
  if (isBaseline && a.sum === 0) out.push('baseline-mean-is-zero');
  return out;
}

/** PostHog's `difference_type` is read by enum name: only RELATIVE / ABSOLUTE (upper case) count. */
function differenceType(stats: Obj, section: Obj | undefined): 'relative' | 'absolute' {
  return section?.difference_type === 'ABSOLUTE' || stats.difference_type === 'ABSOLUTE' ? 'absolute' : 'relative';
}

function present(metric: Obj, arms: VariantAggregate[], baselineKey: string, stats: Obj, weights: ReadonlyMap<string, number>): Obj {
  const method = stats.method === 'frequentist' ? 'frequentist' : 'bayesian';
  const section = (isJsonObject(stats[method]) ? stats[method] : undefined) as Obj | undefined;
  const baseline = arms.find((a) => a.key === baselineKey)!;
  const baselineFailures = failures(metric, baseline, true);
  const config: Obj = {
    baseline_key: baselineKey, difference_type: differenceType(stats, section),
    ...(typeof section?.ci_level === 'number' ? { ci_level: section.ci_level } : {}),
    ...(typeof section?.alpha === 'number' ? { alpha: section.alpha } : {}),
    ...(section?.sequential_testing_enabled === true ? { sequential_testing_enabled: true } : {}),
    ...(typeof section?.sequential_tuning_parameter === 'number' ? { sequential_tuning_parameter: section.sequential_tuning_parameter } : {}),
    ...(metric.goal === 'decrease' ? { goal: 'decrease' } : {}),
  };
  const computed = new Map<string, Obj>();
  const eligible = arms.filter((a) => a !== baseline && failures(metric, a, false).length === 0);
  if (baselineFailures.length === 0 && eligible.length > 0) {
    let result: Obj;
    try {
      result = analyze({ method, config, variants: [statisticOf(metric, baseline), ...eligible.map((a) => statisticOf(metric, a))] });
    } catch (e) {
      // The statistics engine refuses what it cannot analyse (an option it does not know, sums
      // no data could give) naming what to fix: the caller's stats_config, a 400.
      if (e instanceof InputError) throw errors.validation(e.message, 'stats_config');
      throw e;
    }
    for (const r of result.variant_results as Obj[]) computed.set(String(r.key), r);
  }
  const empty = method === 'bayesian' ? { chance_to_win: null, credible_interval: null } : { p_value: null, confidence_interval: null };
  const variantResults = arms.filter((a) => a !== baseline).map((a) => {
    const r = computed.get(a.key);
    const stat = r && r.error === undefined
      ? (method === 'bayesian'
        ? { chance_to_win: r.chance_to_win, credible_interval: r.credible_interval }
        : { p_value: r.p_value, confidence_interval: r.confidence_interval })
      : empty;
    return { ...base(metric, a), method, ...stat, significant: r?.significant === true, validation_failures: failures(metric, a, false) };
  });
  return {
    kind: 'ExperimentQueryResponse',
    baseline: { ...base(metric, baseline), validation_failures: baselineFailures },
    variant_results: variantResults,
    breakdown_results: null,
    metric: { ...metric },
    stats_method: method,
    sample_ratio_mismatch: srmOf(arms, weights),
  };
}

/**
 * Switchyard's addition to the response: the sample-ratio check of the exposures against the
 * flag's variant split (research/experiments.md §4.7; from SRM_MIN_EXPOSURES exposures, a
 * mismatch below p = 0.001), or null with fewer exposures.
 */
function srmOf(arms: VariantAggregate[], weights: ReadonlyMap<string, number>): Obj | null {
  const total = arms.reduce((s, a) => s + a.n, 0);
  if (total < SRM_MIN_EXPOSURES) return null;
  const r = sampleRatioMismatch(arms.map((a) => a.n), arms.map((a) => weights.get(a.key) ?? 0));
  return { p_value: r.p_value, mismatch: r.mismatch, expected: Object.fromEntries(arms.map((a, i) => [a.key, r.expected[i]])) };
}
