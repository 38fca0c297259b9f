/**
 * CUPED variance reduction for mean and 0/1 metrics (research/experiments.md §4.6), both engines:
 *
 * - PostHog (`stats/shared/cuped.py`): θ = Cov(y, x)/Var(x) pooled over both arms with (n − 1),
 *   0 when Var(x) < 1e-10; per arm ȳ_adj = ȳ − θ·x̄, v_adj = max(v_y + θ²·v_x − 2θ·c_xy, 1e-10)
 *   (v_y = p(1 − p) for a 0/1 post metric, c_xy always with n − 1); variance reduction
 *   1 − v_adj/v_y (0 when θ = 0). The relative effect divides by the UNADJUSTED control mean and
 *   takes its variance from the adjusted arms (effect.ts).
 * - GrowthBook (`gbstats/models/statistics.py RegressionAdjustedStatistic`, `models/tests.py
 *   frequentist_variance_relative_cuped`): the same θ and adjusted means, but 0/1 post and pre use
 *   population moments (v = p(1 − p), cov = P/n − S_y·S_x/n²); a computed θ of 0 falls back to
 *   the unadjusted test; the relative variance is the full delta method
 *   [v_adj,T/ȳ_C² + (v_y,C·(ȳ_T/ȳ_C)² − 2θ·c_C·ȳ_T/ȳ_C + θ²·v_x,C)/ȳ_C²] per arm size, with
 *   unadjusted ȳ.
 *
 * θ may be given (`config.cuped_theta`) instead of estimated. In multi-arm experiments θ is
 * computed per (treatment, control) pair, so the control's adjusted figures are reported inside
 * each treatment's result.
 */
import type { Engine } from './engine.js';
import { InputError } from './errors.js';
import { effect, type DifferenceType, type Effect } from './effect.js';
import { sampleCovariance, simpleMoments, sumSquares, type CupedStatistic, type Moments, type SimpleStatistic } from './statistics.js';

/** Smallest variance a PostHog-adjusted arm keeps, and the pooled Var(x) below which θ = 0. */
const FLOOR = 1e-10;

/** What the adjustment did to one arm. */
export interface CupedArm { unadjusted_mean: number; adjusted_mean: number; unadjusted_variance: number; adjusted_variance: number; adjusted_stddev: number; variance_reduction: number }

/** A CUPED comparison: the adjusted arms, the effect, and the per-arm details. */
export interface CupedPair { t: Moments; c: Moments; effect: Effect; theta: number; theta_source: 'given' | 'estimated'; treatment: CupedArm; control: CupedArm; adjusted: boolean }

function bothBinary(a: SimpleStatistic, b: SimpleStatistic): boolean {
  return a.type === 'proportion' && b.type === 'proportion';
}

/** Covariance of post and pre in one arm (population form for 0/1 data under GrowthBook). */
function armCovariance(s: CupedStatistic, engine: Engine): number {
  if (s.n <= 1) return 0;
  if (engine === 'growthbook' && bothBinary(s.post, s.pre)) return s.post_pre_sum_of_products / s.n - (s.post.sum * s.pre.sum) / s.n ** 2;
  return sampleCovariance(s.n, s.post.sum, s.pre.sum, s.post_pre_sum_of_products);
}

function preVariance(s: SimpleStatistic, engine: Engine): number {
  if (engine === 'growthbook' || s.type !== 'proportion') return simpleMoments(s).variance;
  return s.n > 1 ? (s.sum - (s.sum * s.sum) / s.n) / (s.n - 1) : 0; // PostHog reads 0/1 pre data as a sample mean
}

/** θ pooled over both arms, as `engine` computes it. */
export function cupedTheta(a: CupedStatistic, b: CupedStatistic, engine: Engine = 'posthog'): number {
  const n = a.n + b.n;
  if (n <= 1) return 0;
  const sy = a.post.sum + b.post.sum;
  const sx = a.pre.sum + b.pre.sum;
  const sxy = a.post_pre_sum_of_products + b.post_pre_sum_of_products;
  if (engine === 'growthbook') {
    const binary = bothBinary(a.post, b.post) && bothBinary(a.pre, b.pre);
    const joint = (s: number, q: number): number => (binary ? (s / n) * (1 - s / n) : (q - (s * s) / n) / (n - 1));
    const varX = joint(sx, sumSquares(a.pre) + sumSquares(b.pre));
    const varY = joint(sy, sumSquares(a.post) + sumSquares(b.post));
    if (varX === 0 || varY === 0) return 0;
    const cov = binary ? sxy / n - (sy * sx) / n ** 2 : sampleCovariance(n, sy, sx, sxy);
    return cov / varX;
  }
  const varX = (sumSquares(a.pre) + sumSquares(b.pre) - (sx * sx) / n) / (n - 1);
  if (varX < FLOOR) return 0;
  return sampleCovariance(n, sy, sx, sxy) / varX;
}

function adjust(s: CupedStatistic, theta: number, engine: Engine): { m: Moments; arm: CupedArm; cov: number; vx: number } {
  const y = simpleMoments(s.post);
  const x = { mean: s.pre.n > 0 ? s.pre.sum / s.pre.n : 0, variance: preVariance(s.pre, engine) };
  const cov = armCovariance(s, engine);
  let v = s.n > 1 ? y.variance + theta * theta * x.variance - 2 * theta * cov : 0;
  if (engine === 'posthog') v = Math.max(v, FLOOR);
  const mean = y.mean - theta * x.mean;
  const reduction = theta === 0 || !(y.variance > FLOOR) ? 0 : 1 - v / y.variance;
  return {
    m: { n: s.n, mean, variance: v }, cov, vx: x.variance,
    arm: { unadjusted_mean: y.mean, adjusted_mean: mean, unadjusted_variance: y.variance, adjusted_variance: v, adjusted_stddev: Math.sqrt(Math.max(0, v)), variance_reduction: reduction },
  };
}

/** Adjusts both arms and computes the effect. `givenTheta` replaces the estimate. */
export function cupedPair(t: CupedStatistic, c: CupedStatistic, type: DifferenceType, engine: Engine, givenTheta: number | null = null): CupedPair {
  if (engine === 'growthbook' && (t.post.type === 'proportion') !== (t.pre.type === 'proportion')) {
    throw new InputError('Under the GrowthBook engine a CUPED post and pre part must both be 0/1 or both carry sum_squares.');
  }
  const theta = givenTheta ?? cupedTheta(t, c, engine);
  const source = givenTheta === null ? 'estimated' as const : 'given' as const;
  const at = adjust(t, theta, engine);
  const ac = adjust(c, theta, engine);
  const controlMean = ac.arm.unadjusted_mean;
  const absDenominator = engine === 'growthbook';
  const base = { theta, theta_source: source, treatment: at.arm, control: ac.arm };
  if (engine === 'growthbook' && theta === 0 && givenTheta === null) {
    // GrowthBook reverts to the unadjusted test when θ is 0.
    const tm = simpleMoments(t.post);
    const cm = simpleMoments(c.post);
    return { ...base, t: tm, c: cm, effect: effect(tm, cm, type, { absDenominator }), adjusted: false };
  }
  if (engine === 'posthog' || type === 'absolute') {
    return { ...base, t: at.m, c: ac.m, effect: effect(at.m, ac.m, type, { denominator: controlMean, absDenominator }), adjusted: true };
  }
  const d2 = controlMean * controlMean;
  const ratio = at.arm.unadjusted_mean / controlMean;
  const vTreatment = t.n * d2 === 0 ? 0 : at.m.variance / (t.n * d2);
  const vControl = c.n * d2 === 0 ? 0
    : (ac.arm.unadjusted_variance * ratio * ratio - 2 * theta * ac.cov * ratio + theta * theta * ac.vx) / (c.n * d2);
  const delta = controlMean === 0 ? 0 : (at.m.mean - ac.m.mean) / Math.abs(controlMean);
  return { ...base, t: at.m, c: ac.m, effect: { delta, variance: vTreatment + vControl }, adjusted: true };
}
