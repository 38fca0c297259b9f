/**
 * Whether a variant's sufficient statistics can come from real data (PostHog's
 * `InvalidStatisticError` checks in `stats/shared/statistics.py`, extended to every part and
 * cross sum): Σx² ≥ (Σx)²/n (else the variance is negative), 0 ≤ successes ≤ n, a sum of
 * products within the Cauchy–Schwarz bound (cov² ≤ var_x·var_y, else the delta-method or CUPED
 * variance can turn negative), quantile bounds around the estimate with 0 < ν < 1, and no sums
 * without samples. Comparisons allow a relative slack of 1e-9 for floating-point summation noise.
 */
import { InputError } from './errors.js';
import { sampleCovariance, sumSquares, type MeanStatistic, type SimpleStatistic, type VariantInput } from './statistics.js';

const SLACK = 1e-9;

function fail(key: string, field: string, why: string): never {
  throw new InputError(`variant "${key}": ${field} ${why}`);
}

function centred(s: SimpleStatistic): number {
  return s.n > 0 ? sumSquares(s) - (s.sum * s.sum) / s.n : 0;
}

function checkPart(key: string, field: string, s: SimpleStatistic): void {
  if (s.n === 0) {
    if (s.sum !== 0 || sumSquares(s) !== 0) fail(key, `${field}sum`, `is ${s.sum} with n = 0: sums need samples.`);
    return;
  }
  if (s.type === 'proportion') {
    if (s.sum < 0 || s.sum > s.n) fail(key, `${field}sum`, `(${s.sum}) must be between 0 and n (${s.n}) for 0/1 values.`);
    return;
  }
  const floor = (s.sum * s.sum) / s.n;
  if (s.sum_squares < floor - SLACK * Math.max(1, floor)) {
    fail(key, `${field}sum_squares`, `(${s.sum_squares}) is below sum²/n (${floor}): the variance would be negative.`);
  }
}

function checkProduct(key: string, field: string, n: number, x: SimpleStatistic, y: SimpleStatistic, product: number): void {
  if (n <= 1) return;
  const cov = sampleCovariance(n, x.sum, y.sum, product);
  const bound = (centred(x) / (n - 1)) * (centred(y) / (n - 1));
  if (cov * cov > bound * (1 + SLACK) + 1e-12) {
    fail(key, field, `(${product}) implies a covariance (${cov}) larger than the two variances allow (|cov| ≤ ${Math.sqrt(Math.max(0, bound))}).`);
  }
}

/** @throws InputError naming the variant and the field when `v` is impossible. */
export function checkPossible(v: VariantInput): void {
  switch (v.type) {
    case 'proportion':
      checkPart(v.key, '', v);
      return;
    case 'ratio':
      checkPart(v.key, 'numerator.', v.numerator);
      checkPart(v.key, 'denominator.', v.denominator);
      checkProduct(v.key, 'sum_of_products', v.n, v.numerator, v.denominator, v.sum_of_products);
      return;
    case 'cuped':
      checkPart(v.key, 'post.', v.post);
      checkPart(v.key, 'pre.', v.pre);
      checkProduct(v.key, 'post_pre_sum_of_products', v.n, v.post, v.pre, v.post_pre_sum_of_products);
      return;
    case 'cuped_ratio': {
      const parts: Record<string, MeanStatistic> = { m_post: v.numerator_post, d_post: v.denominator_post, m_pre: v.numerator_pre, d_pre: v.denominator_pre };
      const names: Record<string, string> = { m_post: 'numerator_post', d_post: 'denominator_post', m_pre: 'numerator_pre', d_pre: 'denominator_pre' };
      for (const [k, s] of Object.entries(parts)) checkPart(v.key, `${names[k]}.`, s);
      for (const [p, value] of Object.entries(v.products)) {
        const [a, b] = [p.split('_').slice(0, 2).join('_'), p.split('_').slice(2).join('_')];
        checkProduct(v.key, `sums_of_products.${p}`, v.n, parts[a]!, parts[b]!, value);
      }
      return;
    }
    case 'quantile':
      if (!(v.nu > 0 && v.nu < 1)) fail(v.key, 'nu', `(${v.nu}) must be between 0 and 1.`);
      if (!(v.n_star >= 0)) fail(v.key, 'n_star', `(${v.n_star}) must not be negative.`);
      if (!(v.quantile_lower <= v.quantile_hat && v.quantile_hat <= v.quantile_upper)) {
        fail(v.key, 'quantile_lower/quantile_upper', `(${v.quantile_lower}, ${v.quantile_upper}) must surround quantile_hat (${v.quantile_hat}).`);
      }
      return;
    default:
      checkPart(v.key, '', v);
  }
}
