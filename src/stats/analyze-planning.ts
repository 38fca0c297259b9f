/**
 * The non-comparison methods of `analyze`: `srm`, `holm` / `benjamini_hochberg`, `sample_size`
 * and `power` (options and output fields in docs/statistics.md).
 */
import { isJsonObject, type JsonObject } from '../json-shapes.js';
import { levelOf, numberOrNull } from './config.js';
import type { Engine } from './engine.js';
import { InputError } from './errors.js';
import { adjustedConfidenceInterval, benjaminiHochberg, holm } from './multiple.js';
import { num } from './parse-variant.js';
import { minimumDetectableEffect, power, ratioBaseline, sampleSize, SAMPLE_SIZE_KINDS, type PowerMetric } from './power.js';
import { sampleRatioMismatch, SRM_MIN_EXPOSURES, SRM_THRESHOLD } from './srm.js';

type Obj = JsonObject;

/** SRM over `arms` ({key, n, weight}); PostHog leaves it null below 100 exposures, GrowthBook computes it. */
export function srm(arms: { key: string; n: number; weight?: number }[], config: Obj, engine: Engine): Obj {
  const threshold = levelOf(config, 'threshold', SRM_THRESHOLD);
  const weights = arms.map((a) => a.weight ?? 1);
  const total = arms.reduce((s, a) => s + a.n, 0);
  const keys = arms.map((a) => a.key);
  if (engine === 'posthog' && total < SRM_MIN_EXPOSURES) {
    return { method: 'srm', engine, keys, p_value: null, chi_squared: null, expected: null, mismatch: false, reason: `PostHog checks SRM from ${SRM_MIN_EXPOSURES} exposures; there are ${total}.` };
  }
  const r = sampleRatioMismatch(arms.map((a) => a.n), weights);
  return { method: 'srm', engine, keys, ...r, mismatch: r.p_value < threshold };
}

/** Holm or Benjamini–Hochberg over `config.p_values`, with adjusted intervals for `config.lifts`. */
export function correct(method: 'holm' | 'benjamini_hochberg', config: Obj): Obj {
  const ps = config.p_values;
  if (!Array.isArray(ps) || ps.length === 0 || !ps.every((p) => typeof p === 'number' && p >= 0 && p <= 1)) throw new InputError('config.p_values must be a non-empty list of p-values (0..1).');
  const adjusted = (method === 'holm' ? holm : benjaminiHochberg)(ps as number[]);
  const out: Obj = { method, adjusted_p_values: adjusted };
  if (config.lifts !== undefined) {
    const lifts = config.lifts;
    if (!Array.isArray(lifts) || lifts.length !== ps.length || !lifts.every((l) => typeof l === 'number' && Number.isFinite(l))) throw new InputError('config.lifts must be a list of numbers, one per p-value.');
    const alpha = levelOf(config, 'alpha', 0.05);
    out.adjusted_confidence_intervals = adjusted.map((p, i) => adjustedConfidenceInterval(p, lifts[i] as number, alpha));
  } else if (config.alpha !== undefined) {
    throw new InputError('config.alpha sets the level of the adjusted intervals: give config.lifts too.');
  }
  return out;
}

/** PostHog's sample size and running time. */
export function sampleSizeOf(config: Obj): Obj {
  const kind = SAMPLE_SIZE_KINDS[String(config.kind)];
  if (!kind) throw new InputError(`config.kind must be one of ${Object.keys(SAMPLE_SIZE_KINDS).join(', ')}.`);
  const mde = numberOrNull(config, 'mde') ?? 0.3;
  if (!(mde > 0)) throw new InputError('config.mde must be positive (a relative fraction: 0.05 = 5 %).');
  const variants = numberOrNull(config, 'variants') ?? 2;
  if (!(Number.isInteger(variants) && variants >= 2)) throw new InputError('config.variants must be an integer of at least 2.');
  const perDay = numberOrNull(config, 'exposures_per_day');
  if (perDay !== null && !(perDay > 0)) throw new InputError('config.exposures_per_day must be positive.');
  let baseline: number;
  let variance: number | null = null;
  if (kind === 'ratio') {
    if (config.baseline !== undefined) throw new InputError('A ratio sample size derives its baseline from config.baseline_stats; do not give config.baseline.');
    const b = config.baseline_stats;
    if (!isJsonObject(b)) throw new InputError('config.baseline_stats must be {number_of_samples, sum, sum_squares, denominator_sum, denominator_sum_squares, numerator_denominator_sum_product}.');
    const stats = {
      n: num(b.number_of_samples ?? b.n, 'config.baseline_stats.number_of_samples'), sum: num(b.sum, 'config.baseline_stats.sum'), sum_squares: num(b.sum_squares, 'config.baseline_stats.sum_squares'),
      denominator_sum: num(b.denominator_sum, 'config.baseline_stats.denominator_sum'), denominator_sum_squares: num(b.denominator_sum_squares, 'config.baseline_stats.denominator_sum_squares'),
      numerator_denominator_sum_product: num(b.numerator_denominator_sum_product, 'config.baseline_stats.numerator_denominator_sum_product'),
    };
    if (!(stats.n > 0) || stats.denominator_sum === 0) throw new InputError('config.baseline_stats needs samples and a non-zero denominator_sum.');
    ({ baseline, variance } = ratioBaseline(stats));
    if (!(variance > 0)) throw new InputError(`config.baseline_stats give a ratio variance of ${variance}: the sums are impossible.`);
  } else {
    if (config.baseline_stats !== undefined) throw new InputError('config.baseline_stats is for kind ratio only.');
    baseline = num(config.baseline, 'config.baseline');
    if (!(baseline > 0) || (kind === 'funnel' && baseline >= 1)) throw new InputError('config.baseline must be positive (and below 1 for a funnel conversion rate).');
  }
  return { method: 'sample_size', ...sampleSize(kind, baseline, variance, mde, variants, perDay) };
}

function powerMetric(config: Obj): PowerMetric {
  const type = config.metric_type ?? 'mean';
  if (type === 'mean') {
    const sd = num(config.standard_deviation, 'config.standard_deviation');
    if (!(sd > 0)) throw new InputError('config.standard_deviation must be positive.');
    if (config.conversion_rate !== undefined) throw new InputError('config.conversion_rate is for metric_type binomial.');
    return { type: 'mean', mean: num(config.mean, 'config.mean'), standardDeviation: sd };
  }
  if (type === 'binomial') {
    const p = num(config.conversion_rate, 'config.conversion_rate');
    if (!(p > 0 && p < 1)) throw new InputError('config.conversion_rate must be between 0 and 1.');
    if (config.mean !== undefined || config.standard_deviation !== undefined) throw new InputError('config.mean and standard_deviation are for metric_type mean.');
    return { type: 'binomial', conversionRate: p };
  }
  throw new InputError('config.metric_type must be mean or binomial.');
}

/** GrowthBook's power and MDE for one total sample or a list of them. */
export function powerOf(config: Obj): Obj {
  const metric = powerMetric(config);
  const lift = num(config.effect_size, 'config.effect_size');
  const variations = numberOrNull(config, 'variations') ?? 2;
  if (!(Number.isInteger(variations) && variations >= 2)) throw new InputError('config.variations must be an integer of at least 2.');
  const alpha = levelOf(config, 'alpha', 0.05);
  const target = levelOf(config, 'target_power', 0.8);
  const tuning = numberOrNull(config, 'sequential_tuning_parameter');
  if (tuning !== null && !(tuning > 0)) throw new InputError('config.sequential_tuning_parameter must be positive.');
  const list = Array.isArray(config.users);
  const users = (list ? config.users as unknown[] : [config.users]).map((u, i) => {
    const n = num(u, list ? `config.users[${i}]` : 'config.users');
    if (!(n > 0)) throw new InputError('config.users must be positive.');
    return n;
  });
  const rows = users.map((n) => {
    const m = minimumDetectableEffect(metric, target, n, variations, alpha, tuning);
    return { users: n, power: power(metric, lift, n, variations, alpha, tuning), mde: m.mde, ...(m.error ? { mde_error: m.error } : {}) };
  });
  const head = { method: 'power', sequential: tuning !== null, ...(tuning !== null ? { sequential_tuning_parameter: tuning } : {}) };
  return list ? { ...head, results: rows } : { ...head, ...rows[0] };
}
