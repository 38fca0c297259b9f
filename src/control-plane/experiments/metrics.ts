/**
 * Experiment metric JSON (research/posthog-management-api.md §3.9; PostHog's pydantic
 * `ExperimentMetric`, extra keys forbidden): `{kind: "ExperimentMetric", metric_type, uuid?,
 * name?, conversion_window?, conversion_window_unit?, goal?, …}` with per-type sources —
 * `mean` (`source`; `threshold`: a user counts 1 when their value reaches it, else 0), `funnel` (`series`, ≥ 1 step), `ratio` (`numerator`, `denominator`),
 * `retention` (`start_event`, `completion_event`). Sources are `EventsNode` or `ActionsNode`
 * (Switchyard has no actions, so an ActionsNode id never exists) or
 * `ExperimentDataWarehouseNode`. What a query can compute (e.g. the `math_hogql` subset) is
 * checked when it runs (results/query-options.ts).
 *
 * The server assigns a `uuid` when none is given and a `fingerprint`: SHA-256 of the metric
 * (without uuid, name and fingerprint), the experiment's start date, stats method, exposure
 * criteria and — only when set — `only_count_matured_users` (so fingerprints of experiments
 * without it stay as they were), so a change to any of them makes earlier results stale (PostHog
 * `compute_metric_fingerprint`).
 */
import { type JsonObject, isJsonObject, pyType } from '../../json-shapes.js';
import crypto from 'node:crypto';
import { errors } from '../../errors.js';

type Obj = JsonObject;

/** Metric types. */
export const METRIC_TYPES = ['mean', 'funnel', 'ratio', 'retention'] as const;
/** Conversion window units. */
export const WINDOW_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month'] as const;
/** `math` of an EventsNode / ActionsNode source. */
export const MATHS = ['total', 'sum', 'unique_session', 'min', 'max', 'avg', 'dau', 'unique_group', 'hogql'] as const;

const COMMON_KEYS = ['kind', 'uuid', 'name', 'metric_type', 'conversion_window', 'conversion_window_unit', 'goal', 'isSharedMetric', 'sharedMetricId', 'fingerprint', 'breakdownFilter', 'response', 'version'];
const TYPE_KEYS: Readonly<Record<string, readonly string[]>> = {
  mean: ['source', 'lower_bound_percentile', 'upper_bound_percentile', 'ignore_zeros', 'threshold'],
  funnel: ['series', 'funnel_order_type'],
  ratio: ['numerator', 'denominator'],
  retention: ['start_event', 'completion_event', 'retention_window_start', 'retention_window_end', 'retention_window_unit', 'start_handling'],
};
const SOURCE_KEYS = ['kind', 'event', 'id', 'name', 'custom_name', 'math', 'math_property', 'math_property_type', 'math_hogql', 'math_group_type_index', 'properties', 'table_name', 'timestamp_field', 'events_join_key', 'data_warehouse_join_key', 'fixedProperties', 'response', 'version'];

function fail(detail: string, attr: string): never {
  throw errors.validation(detail, attr);
}

function checkSource(v: unknown, attr: string): void {
  if (!isJsonObject(v)) fail(`Expected a dictionary of items but got type "${pyType(v)}".`, attr);
  for (const k of Object.keys(v)) if (!SOURCE_KEYS.includes(k)) fail(`Extra inputs are not permitted: "${k}".`, `${attr}__${k}`);
  if (v.kind === 'EventsNode') {
    if ('id' in v) fail('EventsNode does not take an id; name the event in "event".', `${attr}__id`);
    if (v.event !== null && v.event !== undefined && typeof v.event !== 'string') fail('"event" must be a string or null.', `${attr}__event`);
  } else if (v.kind === 'ActionsNode') {
    if (!Number.isSafeInteger(v.id)) fail('ActionsNode needs an integer "id".', `${attr}__id`);
    fail(`Action with id ${String(v.id)} does not exist.`, `${attr}__id`);
  } else if (v.kind !== 'ExperimentDataWarehouseNode') {
    fail(`Source kind must be EventsNode, ActionsNode or ExperimentDataWarehouseNode; got ${JSON.stringify(v.kind ?? null)}.`, `${attr}__kind`);
  }
  if (v.math !== undefined && v.math !== null && !(MATHS as readonly unknown[]).includes(v.math)) {
    fail(`"${String(v.math)}" is not a valid math; use one of ${MATHS.join(', ')}.`, `${attr}__math`);
  }
  if (v.properties !== undefined && v.properties !== null && !Array.isArray(v.properties)) fail('"properties" must be a list.', `${attr}__properties`);
}

/**
 * Validates one metric (`attr` names it in errors, e.g. `metrics__0`) and returns a copy with
 * a `uuid` (kept when given, else new). @throws ApiError 400.
 */
export function validateMetric(raw: unknown, attr: string): Obj {
  if (!isJsonObject(raw)) fail(`Expected a dictionary of items but got type "${pyType(raw)}".`, attr);
  if (raw.kind !== 'ExperimentMetric') fail(`Metrics must be of kind "ExperimentMetric"; got ${JSON.stringify(raw.kind ?? null)}.`, `${attr}__kind`);
  const type = raw.metric_type;
  if (typeof type !== 'string' || !(METRIC_TYPES as readonly string[]).includes(type)) {
    fail(`metric_type must be one of ${METRIC_TYPES.join(', ')}.`, `${attr}__metric_type`);
  }
  const allowed = [...COMMON_KEYS, ...TYPE_KEYS[type]!];
  for (const k of Object.keys(raw)) if (!allowed.includes(k)) fail(`Extra inputs are not permitted: "${k}".`, `${attr}__${k}`);
  if (raw.uuid !== undefined && raw.uuid !== null && (typeof raw.uuid !== 'string' || raw.uuid.trim() === '')) fail('"uuid" must be a non-empty string.', `${attr}__uuid`);
  if (raw.name !== undefined && raw.name !== null && typeof raw.name !== 'string') fail('"name" must be a string.', `${attr}__name`);
  if (raw.conversion_window !== undefined && raw.conversion_window !== null && (!Number.isSafeInteger(raw.conversion_window) || (raw.conversion_window as number) < 1)) {
    fail('conversion_window must be a positive integer.', `${attr}__conversion_window`);
  }
  if (raw.conversion_window_unit !== undefined && raw.conversion_window_unit !== null && !(WINDOW_UNITS as readonly unknown[]).includes(raw.conversion_window_unit)) {
    fail(`conversion_window_unit must be one of ${WINDOW_UNITS.join(', ')}.`, `${attr}__conversion_window_unit`);
  }
  if (raw.goal !== undefined && raw.goal !== null && raw.goal !== 'increase' && raw.goal !== 'decrease') fail('goal must be "increase" or "decrease".', `${attr}__goal`);
  switch (type) {
    case 'mean':
      checkSource(raw.source, `${attr}__source`);
      for (const k of ['lower_bound_percentile', 'upper_bound_percentile'] as const) {
        const p = raw[k];
        if (p !== undefined && p !== null && (typeof p !== 'number' || p < 0 || p > 1)) fail(`${k} must be a number from 0 to 1.`, `${attr}__${k}`);
      }
      if (raw.ignore_zeros !== undefined && raw.ignore_zeros !== null && typeof raw.ignore_zeros !== 'boolean') fail('ignore_zeros must be a boolean.', `${attr}__ignore_zeros`);
      if (raw.threshold !== undefined && raw.threshold !== null) {
        if (typeof raw.threshold !== 'number' || !Number.isFinite(raw.threshold)) fail('threshold must be a number.', `${attr}__threshold`);
      }
      break;
    case 'funnel':
      if (!Array.isArray(raw.series) || raw.series.length === 0) fail('A funnel metric needs at least one step in "series".', `${attr}__series`);
      raw.series.forEach((s, i) => checkSource(s, `${attr}__series__${i}`));
      if (raw.funnel_order_type !== undefined && raw.funnel_order_type !== null && !['ordered', 'unordered', 'strict'].includes(String(raw.funnel_order_type))) {
        fail('funnel_order_type must be ordered, unordered or strict.', `${attr}__funnel_order_type`);
      }
      break;
    case 'ratio':
      checkSource(raw.numerator, `${attr}__numerator`);
      checkSource(raw.denominator, `${attr}__denominator`);
      break;
    default:
      checkSource(raw.start_event, `${attr}__start_event`);
      checkSource(raw.completion_event, `${attr}__completion_event`);
  }
  const out: Obj = structuredClone(raw);
  if (typeof out.uuid !== 'string' || out.uuid.trim() === '') out.uuid = crypto.randomUUID();
  delete out.fingerprint;
  return out;
}

/** JSON with object keys sorted, so equal values hash equally. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isJsonObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v ?? null);
}

/** The metric's fingerprint under an experiment's start date, stats method, exposure criteria and matured-users setting. */
export function metricFingerprint(metric: Obj, startDate: Date | null, statsMethod: string, exposureCriteria: unknown, onlyCountMaturedUsers = false): string {
  const { uuid: _u, name: _n, fingerprint: _f, ...rest } = metric;
  return crypto.createHash('sha256')
    .update(canonical({
      metric: rest, start_date: startDate?.toISOString() ?? null, stats_method: statsMethod, exposure_criteria: exposureCriteria ?? null,
      ...(onlyCountMaturedUsers ? { only_count_matured_users: true } : {}),
    }))
    .digest('hex');
}

/** Validates a list field of metrics (`metrics`, `metrics_secondary`). @throws ApiError 400. */
export function validateMetricList(raw: unknown, attr: string): Obj[] {
  if (raw === null) return [];
  if (!Array.isArray(raw)) fail(`Expected a list of items but got type "${pyType(raw)}".`, attr);
  const out = raw.map((m, i) => validateMetric(m, `${attr}__${i}`));
  const seen = new Set<string>();
  for (const m of out) {
    if (seen.has(m.uuid as string)) fail(`Duplicate metric uuid ${String(m.uuid)}.`, attr);
    seen.add(m.uuid as string);
  }
  return out;
}
