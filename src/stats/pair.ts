/**
 * One (treatment, control) comparison reduced to what the tests need: both arms' moments (for
 * Welch's degrees of freedom), the effect Δ and its variance V, the control's unadjusted mean
 * (the relative denominator and a proper prior's scale) and, for CUPED, what the adjustment did.
 * Both arms must have the same statistic type (PostHog raises otherwise). Under the GrowthBook
 * engine a comparison with a zero or negative variance, or a zero control mean, is refused as
 * GrowthBook refuses it (`models/tests.py EffectMoments.compute_result`).
 */
import type { JsonObject } from '../json-shapes.js';
import { cupedPair } from './cuped.js';
import { cupedRatioPair } from './cuped-ratio.js';
import { effect, StatsError, type DifferenceType, type Effect } from './effect.js';
import type { Engine } from './engine.js';
import { InputError } from './errors.js';
import type { VariantInput } from './parse-variant.js';
import { quantileHasNoVariance, quantileMoments } from './quantile.js';
import { moments, type Moments } from './statistics.js';

/** A computed comparison. */
export interface Pair { t: Moments; c: Moments; effect: Effect; controlMean: number; cuped?: JsonObject }

/** GrowthBook's message for a comparison without variance. */
export const ZERO_VARIANCE = 'Zero or negative variance: the comparison cannot be computed.';
/** GrowthBook's message for a zero control mean. */
export const BASELINE_ZERO = 'The baseline (control) mean is zero.';

/** Compares `v` with `baseline`. @throws InputError for mixed types; StatsError when it cannot be computed. */
export function comparePair(v: VariantInput, baseline: VariantInput, type: DifferenceType, engine: Engine, opts: { absDenominator: boolean; theta: number | null }): Pair {
  if (v.type !== baseline.type && !(isMean(v) && isMean(baseline))) {
    throw new InputError(`variant "${v.key}" is ${v.type ?? 'mean'} but the baseline "${baseline.key}" is ${baseline.type ?? 'mean'}: both must have the same type.`);
  }
  const pair = compute(v, baseline, type, engine, opts);
  if (engine === 'growthbook') {
    if (!(pair.t.variance > 0) || !(pair.c.variance > 0) || !(pair.effect.variance > 0)) throw new StatsError(ZERO_VARIANCE);
    if (pair.c.mean === 0 || pair.controlMean === 0) throw new StatsError(BASELINE_ZERO);
  }
  return pair;
}

function isMean(v: VariantInput): boolean {
  return v.type === undefined || v.type === 'mean';
}

function compute(v: VariantInput, b: VariantInput, type: DifferenceType, engine: Engine, opts: { absDenominator: boolean; theta: number | null }): Pair {
  if (v.type === 'cuped' && b.type === 'cuped') {
    const p = cupedPair(v, b, type, engine, opts.theta);
    return {
      t: p.t, c: p.c, effect: p.effect, controlMean: p.control.unadjusted_mean,
      cuped: { theta: p.theta, theta_source: p.theta_source, adjusted: p.adjusted, treatment: { ...p.treatment }, control: { ...p.control } },
    };
  }
  if (v.type === 'cuped_ratio' && b.type === 'cuped_ratio') {
    const p = cupedRatioPair(v, b, type, opts.theta);
    const arm = (m: Moments, unadjusted: number): JsonObject => ({ unadjusted_mean: unadjusted, adjusted_mean: m.mean, adjusted_variance: m.variance, adjusted_stddev: Math.sqrt(Math.max(0, m.variance)) });
    return {
      t: p.t, c: p.c, effect: p.effect, controlMean: p.control_unadjusted_mean,
      cuped: { theta: p.theta, theta_source: p.theta_source, adjusted: p.adjusted, treatment: arm(p.t, p.treatment_unadjusted_mean), control: arm(p.c, p.control_unadjusted_mean) },
    };
  }
  if (opts.theta !== null) throw new InputError('config.cuped_theta applies to cuped and cuped_ratio variants only.');
  if (v.type === 'quantile' && b.type === 'quantile') {
    if (quantileHasNoVariance(v) || quantileHasNoVariance(b)) throw new StatsError(ZERO_VARIANCE);
    const t = quantileMoments(v);
    const c = quantileMoments(b);
    return { t, c, effect: effect(t, c, type, { absDenominator: opts.absDenominator }), controlMean: c.mean };
  }
  for (const arm of [v, b]) {
    if (arm.type === 'ratio' && arm.denominator.sum === 0 && arm.n > 0) throw new StatsError(`variant "${arm.key}": the denominator sum is zero, so the ratio is undefined.`);
  }
  const t = moments(v as Parameters<typeof moments>[0]);
  const c = moments(b as Parameters<typeof moments>[0]);
  return { t, c, effect: effect(t, c, type, { absDenominator: opts.absDenominator }), controlMean: c.mean };
}

/** The mean an arm reports (unadjusted; the quantile estimate for quantile metrics). */
export function reportedMean(v: VariantInput): number {
  switch (v.type) {
    case 'cuped': return v.n > 0 ? v.post.sum / v.n : 0;
    case 'cuped_ratio': return v.denominator_post.sum !== 0 ? v.numerator_post.sum / v.denominator_post.sum : 0;
    case 'quantile': return v.quantile_hat;
    default: return moments(v).mean;
  }
}
