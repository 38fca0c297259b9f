/**
 * Per-arm sufficient statistics and their mean and per-entity variance (research/experiments.md
 * §4 notation; PostHog `stats/shared/statistics.py`, identical in GrowthBook's
 * `gbstats/models/statistics.py`):
 *
 * - mean:        {n, sum, sum_squares}; m = S/n, v = (Q − S²/n)/(n − 1) (0 when n ≤ 1)
 * - proportion:  {n, sum}; p = S/n, v = p(1 − p) (no Bessel correction)
 * - ratio:       {n, numerator, denominator, sum_of_products}; R = S_m/S_d, delta-method
 *                v = v_m/d̄² + m̄²·v_d/d̄⁴ − 2·m̄·c/d̄³ with c = (P − S_m·S_d/n)/(n − 1)
 * - cuped:       {n, post, pre, post_pre_sum_of_products}: the in-experiment metric and its
 *                pre-exposure covariate (adjusted in cuped.ts)
 * - cuped_ratio: GrowthBook's regression-adjusted ratio (cuped-ratio.ts)
 * - quantile:    GrowthBook's quantile statistic (quantile.ts)
 *
 * Variances are returned as computed, never clamped: impossible statistics are refused when the
 * input is read (parse-variant.ts), or, under the GrowthBook engine, reach GrowthBook's own
 * "zero or negative variance" result.
 */

/** {n, sum, sum_squares} of per-entity values. */
export interface MeanStatistic { type?: 'mean'; n: number; sum: number; sum_squares: number }
/** {n, sum}: sum successes of n. */
export interface ProportionStatistic { type: 'proportion'; n: number; sum: number }
/** A mean or a proportion: the parts of ratio and CUPED statistics. */
export type SimpleStatistic = MeanStatistic | ProportionStatistic;
/** Numerator and denominator per entity, with Σ numerator·denominator. */
export interface RatioStatistic { type: 'ratio'; n: number; numerator: MeanStatistic; denominator: MeanStatistic; sum_of_products: number }
/** The metric after exposure and the same metric before it, with Σ post·pre. */
export interface CupedStatistic { type: 'cuped'; n: number; post: SimpleStatistic; pre: SimpleStatistic; post_pre_sum_of_products: number }
/** Regression-adjusted ratio: post/pre numerator and denominator and their six cross sums. */
export interface CupedRatioStatistic {
  type: 'cuped_ratio'; n: number;
  numerator_post: MeanStatistic; denominator_post: MeanStatistic; numerator_pre: MeanStatistic; denominator_pre: MeanStatistic;
  /** Σ products keyed `m_post_m_pre`, `d_post_d_pre`, `m_pre_d_pre`, `m_post_d_post`, `m_post_d_pre`, `m_pre_d_post`. */
  products: Record<CupedRatioProduct, number>;
}
/** The six cross sums a regression-adjusted ratio needs. */
export type CupedRatioProduct = 'm_post_m_pre' | 'd_post_d_pre' | 'm_pre_d_pre' | 'm_post_d_post' | 'm_post_d_pre' | 'm_pre_d_post';
/** GrowthBook's quantile statistic: n events, n_star for the bounds, level nu, estimate and its 95 % bounds. */
export interface QuantileStatistic { type: 'quantile'; n: number; n_star: number; nu: number; quantile_hat: number; quantile_lower: number; quantile_upper: number }

/** Any arm statistic. */
export type ArmStatistic = MeanStatistic | ProportionStatistic | RatioStatistic | CupedStatistic | CupedRatioStatistic | QuantileStatistic;

/** One variant as given to `analyze`: a statistic with its key and optional expected traffic share. */
export type VariantInput = ArmStatistic & { key: string; weight?: number };

/** An arm reduced to what the tests use: sample size, mean and per-entity variance. */
export interface Moments { n: number; mean: number; variance: number }

/** Sample mean and (n − 1) variance of a mean statistic (not clamped). */
export function meanMoments(s: MeanStatistic): Moments {
  const mean = s.n > 0 ? s.sum / s.n : 0;
  const variance = s.n > 1 ? (s.sum_squares - (s.sum * s.sum) / s.n) / (s.n - 1) : 0;
  return { n: s.n, mean, variance };
}

/** Share and p(1 − p) of a proportion. */
export function proportionMoments(s: ProportionStatistic): Moments {
  const p = s.n > 0 ? s.sum / s.n : 0;
  return { n: s.n, mean: p, variance: p * (1 - p) };
}

/** Moments of a mean or proportion part. */
export function simpleMoments(s: SimpleStatistic): Moments {
  return s.type === 'proportion' ? proportionMoments(s) : meanMoments(s);
}

/** Σx² of a part (a proportion's values are 0/1, so Σx² = Σx). */
export function sumSquares(s: SimpleStatistic): number {
  return s.type === 'proportion' ? s.sum : s.sum_squares;
}

/** Sample covariance (n − 1) from Σxy and both sums; 0 when n ≤ 1. */
export function sampleCovariance(n: number, sumX: number, sumY: number, sumXY: number): number {
  return n > 1 ? (sumXY - (sumX * sumY) / n) / (n - 1) : 0;
}

/** Delta-method variance of M/D from means, variances and covariance (0 when D̄ = 0). */
export function varianceOfRatio(meanM: number, varM: number, meanD: number, varD: number, cov: number): number {
  if (meanD === 0) return 0;
  return varM / meanD ** 2 + (meanM ** 2 * varD) / meanD ** 4 - (2 * meanM * cov) / meanD ** 3;
}

/** Ratio and delta-method per-entity variance. */
export function ratioMoments(s: RatioStatistic): Moments {
  const m = meanMoments(s.numerator);
  const d = meanMoments(s.denominator);
  const cov = sampleCovariance(s.n, s.numerator.sum, s.denominator.sum, s.sum_of_products);
  const mean = s.denominator.sum !== 0 ? s.numerator.sum / s.denominator.sum : 0;
  const variance = d.mean === 0 || s.n <= 1 ? 0 : varianceOfRatio(m.mean, m.variance, d.mean, d.variance, cov);
  return { n: s.n, mean, variance };
}

/** Moments of a mean, proportion or ratio statistic. */
export function moments(s: MeanStatistic | ProportionStatistic | RatioStatistic): Moments {
  if (s.type === 'proportion') return proportionMoments(s);
  if (s.type === 'ratio') return ratioMoments(s);
  return meanMoments(s);
}
