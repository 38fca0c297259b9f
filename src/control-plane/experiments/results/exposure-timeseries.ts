/**
 * `ExperimentExposureQuery` (the exposures chart of PostHog's experiment page): how many entities
 * were first exposed to each variant per day, as PostHog's ExperimentExposuresQueryRunner answers
 * it (products/experiments/backend/hogql_queries/experiment_exposures_query_runner.py).
 *
 * Query: `{kind: "ExperimentExposureQuery", experiment_id, experiment_name?, feature_flag?,
 * start_date?, end_date?, exposure_criteria?, holdout?}`. The flag key is the experiment's; the
 * variants are `feature_flag.filters.multivariate.variants` when the query sends the flag, else
 * the stored flag's; `start_date`, `end_date` and `exposure_criteria` are the query's when it
 * sends them, else the experiment's (a missing end is now).
 *
 * Rules (exposures.ts for the exposure event, entity and custom exposure config):
 * - each entity counts once, on the day (project time zone) of its first exposure in the window;
 * - `multiple_variant_handling` `exclude` (default): an entity that saw several variants counts
 *   under `$multiple`; `first_seen`: under the variant of its first exposure;
 * - only the variants' keys count (the holdout and unknown responses do not);
 * - every variant gets a series, every day of the window a point (zero-filled), `$multiple` last.
 *
 * Response: `{timeseries: [{variant, days: ["YYYY-MM-DD"…], exposure_counts: [cumulative…]}],
 * total_exposures: {variant: n}, date_range: {date_from, date_to, explicitDate},
 * sample_ratio_mismatch: {expected: {variant: n}, p_value} | null, bias_risk: null}`. The SRM
 * check compares the variants with a rollout share (not `$multiple`) from 100 exposures on
 * (PostHog's SRM_MINIMUM_SAMPLE_SIZE); Switchyard does not compute PostHog's bias_risk warning.
 * A draft (no start date) answers empty series.
 */
import { type JsonObject, isJsonObject } from '../../../json-shapes.js';
import type { Sql, Tx } from '../../db/connect.js';
import { errors } from '../../../errors.js';
import { sampleRatioMismatch } from '../../../stats/srm.js';
import * as store from '../store.js';
import { eventFiltersSql } from '../../events/property-filters.js';
import { entitySql, hasMerges, personJoinSql } from '../../events/person-merges.js';
import { limitedTransaction } from '../../query/time-limit.js';
import { type QueryBudget, statementLimit } from '../../query/budget.js';

type Obj = JsonObject;

/** PostHog's key of the entities that saw several variants (MULTIPLE_VARIANT_KEY). */
export const MULTIPLE_VARIANT_KEY = '$multiple';
/** Fewest exposures of the variants before the SRM check (PostHog's SRM_MINIMUM_SAMPLE_SIZE). */
export const EXPOSURE_SRM_MIN = 100;
const DAY_MS = 86_400_000;

function dateOf(v: unknown, attr: string): Date | null {
  if (v === null || v === undefined || v === '') return null;
  const d = typeof v === 'string' ? new Date(/(Z|[+-]\d{2}:?\d{2})$/.test(v) || v.length === 10 ? v : `${v}Z`) : null;
  if (!d || Number.isNaN(d.getTime())) throw errors.validation(`${attr} must be an ISO 8601 date-time or null.`, attr);
  return d;
}

/** `YYYY-MM-DD` of `at` in `timezone`. */
function localDay(at: Date, timezone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
}

/** The days from `first` to `last` (both `YYYY-MM-DD`), inclusive. */
function daysBetween(first: string, last: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`); t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** Rows (day, variant, n) of first exposures per day and variant. */
async function firstExposures(tx: Tx, s: {
  projectId: number; flagKey: string; variants: string[]; start: Date; end: Date; groupIndex: number | null; criteria: Obj; timezone: string;
}): Promise<{ day: string; variant: string; n: number }[]> {
  const merges = s.groupIndex === null && await hasMerges(tx, s.projectId);
  const config = isJsonObject(s.criteria.exposure_config) && s.criteria.exposure_config.kind === 'ExperimentEventExposureConfig' ? s.criteria.exposure_config : null;
  const variantExpr = config ? tx`(e.properties->>${`$feature/${s.flagKey}`})` : tx`(e.properties->>'$feature_flag_response')`;
  const eventFilter = config
    ? tx`e.event = ${String(config.event)} AND ${eventFiltersSql(tx, config.properties, 'exposure_criteria')}`
    : tx`e.event = '$feature_flag_called' AND left(e.properties->>'$feature_flag', 400) = ${s.flagKey}`;
  const pick = s.criteria.multiple_variant_handling === 'first_seen'
    ? tx`(array_agg(variant ORDER BY ts))[1]`
    : tx`CASE WHEN min(variant) = max(variant) THEN min(variant) ELSE ${MULTIPLE_VARIANT_KEY} END`;
  return tx<{ day: string; variant: string; n: number }[]>`
    SELECT to_char(first_ts AT TIME ZONE ${s.timezone}, 'YYYY-MM-DD') AS day, variant, count(*)::int AS n
    FROM (SELECT entity, ${pick} AS variant, min(ts) AS first_ts
          FROM (SELECT ${entitySql(tx, s.groupIndex, merges)} AS entity, e.timestamp AS ts, ${variantExpr} AS variant
                FROM events e ${personJoinSql(tx, s.groupIndex, merges)}
                WHERE e.project_id = ${s.projectId} AND ${eventFilter} AND e.timestamp >= ${s.start} AND e.timestamp <= ${s.end}) r
          WHERE entity IS NOT NULL AND variant = ANY(${tx.array(s.variants)}::text[])
          GROUP BY entity) f
    GROUP BY 1, 2`;
}

/**
 * Runs an `ExperimentExposureQuery` for the project (module doc) under `budget`.
 * @throws ApiError 400 for a bad query or an experiment that does not exist.
 */
export async function runExperimentExposureQuery(sql: Sql, projectId: number, query: Obj, budget: QueryBudget = statementLimit(0)): Promise<Obj> {
  if (query.experiment_id === undefined || query.experiment_id === null) throw errors.validation('experiment_id is required', 'experiment_id');
  const id = Number(query.experiment_id);
  const experiment = Number.isSafeInteger(id) ? await store.getExperiment(sql, projectId, id) : null;
  if (!experiment || experiment.deleted) throw errors.validation(`Experiment with id ${String(query.experiment_id)} not found`, 'experiment_id', 'not_found');
  const [flag] = await sql<{ key: string; filters: Obj }[]>`SELECT key, filters FROM feature_flags WHERE id = ${experiment.feature_flag_id}`;
  if (!flag) throw errors.validation('Experiment does not have a feature flag', null);
  if (query.feature_flag !== undefined && query.feature_flag !== null && !isJsonObject(query.feature_flag)) throw errors.validation('feature_flag must be an object.', 'feature_flag');
  const flagFilters = isJsonObject(query.feature_flag) && isJsonObject(query.feature_flag.filters) ? query.feature_flag.filters : flag.filters;
  const variantDefs = ((flagFilters.multivariate as Obj | undefined)?.variants as Obj[] | undefined) ?? [];
  const variants = variantDefs.map((v) => String(v.key));
  const groupIndex = typeof flagFilters.aggregation_group_type_index === 'number' ? flagFilters.aggregation_group_type_index : null;
  if (query.exposure_criteria !== undefined && query.exposure_criteria !== null && !isJsonObject(query.exposure_criteria)) {
    throw errors.validation('exposure_criteria must be an object.', 'exposure_criteria');
  }
  const criteria = (query.exposure_criteria !== undefined ? query.exposure_criteria : experiment.exposure_criteria) as Obj | null ?? {};
  const start = 'start_date' in query ? dateOf(query.start_date, 'start_date') : experiment.start_date;
  const endDate = 'end_date' in query ? dateOf(query.end_date, 'end_date') : experiment.end_date;
  const end = endDate ?? new Date();
  if (start === null) {
    return { timeseries: [], total_exposures: {}, date_range: { date_from: null, date_to: null, explicitDate: true }, sample_ratio_mismatch: null, bias_risk: null };
  }
  const [project] = await sql<{ timezone: string }[]>`SELECT timezone FROM projects WHERE id = ${projectId}`;
  const timezone = project?.timezone ?? 'UTC';
  const rows = variants.length === 0 ? [] : await limitedTransaction(sql, budget, (tx) => firstExposures(tx, {
    projectId, flagKey: flag.key, variants, start, end, groupIndex, criteria, timezone,
  }));
  const days = daysBetween(localDay(start, timezone), localDay(end, timezone));
  const keys = [...variants, ...(rows.some((r) => r.variant === MULTIPLE_VARIANT_KEY) ? [MULTIPLE_VARIANT_KEY] : [])];
  const counts = new Map(rows.map((r) => [`${r.variant}\u0000${r.day}`, r.n]));
  const timeseries = keys.map((variant) => {
    let total = 0;
    return { variant, days, exposure_counts: days.map((day) => (total += counts.get(`${variant}\u0000${day}`) ?? 0)) };
  });
  const totalExposures = Object.fromEntries(timeseries.map((t) => [t.variant, t.exposure_counts.at(-1) ?? 0]));
  return {
    timeseries,
    total_exposures: totalExposures,
    date_range: { date_from: start.toISOString(), date_to: end.toISOString(), explicitDate: true },
    sample_ratio_mismatch: exposureSrm(variantDefs, totalExposures),
    bias_risk: null,
  };
}

/** PostHog's SRM of the exposures chart: variants with a rollout share, from {@link EXPOSURE_SRM_MIN} exposures on. */
function exposureSrm(variantDefs: Obj[], totals: Record<string, number>): Obj | null {
  const arms = variantDefs.map((v) => ({ key: String(v.key), weight: Number(v.rollout_percentage ?? 0) })).filter((a) => a.weight > 0);
  const observed = arms.map((a) => totals[a.key] ?? 0);
  if (arms.length < 2 || observed.reduce((s, n) => s + n, 0) < EXPOSURE_SRM_MIN) return null;
  const r = sampleRatioMismatch(observed, arms.map((a) => a.weight));
  return { expected: Object.fromEntries(arms.map((a, i) => [a.key, r.expected[i]])), p_value: r.p_value };
}
