/**
 * GrowthBook's quantile metrics (`gbstats/models/statistics.py QuantileStatistic`): an arm is
 * {n, n_star, nu, quantile_hat, quantile_lower, quantile_upper} where the bounds are the
 * estimate's 95 % interval evaluated with n_star units. The arm's "mean" is the quantile
 * estimate and its per-unit variance is
 *   v = (n_star/n)·(n − 1)·((upper − lower)/(2·z₀.₉₇₅))²  (0 when n ≤ 1),
 * floored at 1e-5 from 100 events. The arm has no usable variance when
 * n ≤ z₀.₉₇₅²·ν/(1 − ν), n ≤ z₀.₉₇₅²·(1 − ν)/ν, or the bounds collapse. The effect and its tests
 * are then the ordinary ones (effect.ts), as in GrowthBook.
 */
import { normalQuantile } from './distributions.js';
import type { Moments, QuantileStatistic } from './statistics.js';

/** z₀.₉₇₅, computed on first use: the quantile function's package loads only when a result needs it. */
let z975: number | undefined;
function Z975(): number {
  return (z975 ??= normalQuantile(1 - 0.5 * 0.05));
}

function initialVariance(s: QuantileStatistic): number {
  if (s.n <= 1) return 0;
  const half = (s.quantile_upper - s.quantile_lower) / (2 * Z975());
  return (s.n_star / s.n) * (s.n - 1) * half * half;
}

/** True when GrowthBook treats the arm as having no variance (too few events for ν, or collapsed bounds). */
export function quantileHasNoVariance(s: QuantileStatistic): boolean {
  const aboveOne = s.n <= (Z975() ** 2 * s.nu) / (1 - s.nu);
  const belowZero = s.n <= (Z975() ** 2 * (1 - s.nu)) / s.nu;
  return aboveOne || belowZero || initialVariance(s) <= 0;
}

/** Quantile estimate and per-unit variance of one arm. */
export function quantileMoments(s: QuantileStatistic): Moments {
  const v = initialVariance(s);
  return { n: s.n, mean: s.quantile_hat, variance: s.n < 100 ? v : Math.max(v, 1e-5) };
}
