/**
 * Per-arm sufficient statistics and their mean and per-entity variance (research/experiments.md
 * §4 notation; PostHog `stats/shared/statistics.py`, identical in GrowthBook's gbstats):
 *
 * - mean:       {n, sum, sum_squares}; m = S/n, v = (Q − S²/n)/(n − 1) (0 when n ≤ 1)
 * - proportion: {n, sum}; p = S/n, v = p(1 − p) (no Bessel correction)
 * - ratio:      {n, numerator, denominator, sum_of_products}; R = S_m/S_d, delta-method
 *               v = v_m/d̄² + m̄²·v_d/d̄⁴ − 2·m̄·c/d̄³ with c = (P − S_m·S_d/n)/(n − 1)
 * - cuped:      {n, post, pre, post_pre_sum_of_products}: the in-experiment metric and its
 *               pre-exposure covariate (adjusted in cuped.ts)
 */

/** {n, sum, sum_squares} of per-entity values. */
export interface MeanStatistic { type?: 'mean'; n: number; sum: number; sum_squares: number }
/** {n, sum}: sum successes of n. */
export interface ProportionStatistic { type: 'proportion'; n: number; sum: number }
/** Numerator and denominator per entity, with Σ numerator·denominator. */
export interface RatioStatistic { type: 'ratio'; n: number; numerator: MeanStatistic; denominator: MeanStatistic; sum_of_products: number }
/** The metric after exposure and the same metric before it, with Σ post·pre. */
export interface CupedStatistic { type: 'cuped'; n: number; post: MeanStatistic; pre: MeanStatistic; post_pre_sum_of_products: number }

/** Any arm statistic. */
export type ArmStatistic = MeanStatistic | ProportionStatistic | RatioStatistic | CupedStatistic;

/** An arm reduced to what the tests use: sample size, mean and per-entity variance. */
export interface Moments { n: number; mean: number; variance: number }

/** Sample mean and (n − 1) variance of a mean statistic. */
export function meanMoments(s: MeanStatistic): Moments {
  const mean = s.n > 0 ? s.sum / s.n : 0;
  const variance = s.n > 1 ? Math.max(0, (s.sum_squares - (s.sum * s.sum) / s.n) / (s.n - 1)) : 0;
  return { n: s.n, mean, variance };
}

/** Share and p(1 − p) of a proportion. */
export function proportionMoments(s: ProportionStatistic): Moments {
  const p = s.n > 0 ? s.sum / s.n : 0;
  return { n: s.n, mean: p, variance: p * (1 - p) };
}

/** Ratio and delta-method per-entity variance. */
export function ratioMoments(s: RatioStatistic): Moments {
  const m = meanMoments(s.numerator);
  const d = meanMoments(s.denominator);
  const n = s.n;
  const dbar = d.mean;
  const mbar = m.mean;
  const cov = n > 1 ? (s.sum_of_products - (s.numerator.sum * s.denominator.sum) / n) / (n - 1) : 0;
  const mean = s.denominator.sum !== 0 ? s.numerator.sum / s.denominator.sum : 0;
  const variance = dbar === 0 ? 0
    : m.variance / dbar ** 2 + (mbar ** 2 * d.variance) / dbar ** 4 - (2 * mbar * cov) / dbar ** 3;
  return { n, mean, variance: Math.max(0, variance) };
}

/** Moments of any non-CUPED statistic. */
export function moments(s: MeanStatistic | ProportionStatistic | RatioStatistic): Moments {
  if (s.type === 'proportion') return proportionMoments(s);
  if (s.type === 'ratio') return ratioMoments(s);
  return meanMoments(s);
}
