/**
 * Regression-adjusted (CUPED) ratio metrics, GrowthBook's definition (PostHog has none:
 * `stats/shared/cuped.py` refuses ratios) — `gbstats/models/statistics.py
 * RegressionAdjustedRatioStatistic`, `compute_theta_regression_adjusted_ratio`, and
 * `models/tests.py frequentist_variance_relative_cuped_ratio`:
 *
 * - β = (m̄_post, d̄_post, m̄_pre, d̄_pre); Λ = their 4×4 per-unit covariance (n − 1) from the
 *   sums, squares and six cross sums; the adjusted ratio is R_post − θ·R_pre with
 *   R = Σm/Σd, and its per-unit variance ∇ᵀΛ∇ with ∇ = (1/β₁, −β₀/β₁², −θ/β₃, θ·β₂/β₃²).
 * - θ = −(c_A + c_B)/(p_A + p_B) with, at θ = 1, c = ∇_preᵀΛ_pre,post∇_post and
 *   p = ∇_preᵀΛ_pre∇_pre; |θ| < 1e-8 falls back to the unadjusted ratio.
 * - Relative effect (R_T,adj − R_C,adj)/|R_C,post| with the full delta-method variance over both
 *   arms; absolute effect variance v_T/n_T + v_C/n_C.
 */
import { effect, type DifferenceType, type Effect } from './effect.js';
import { meanMoments, ratioMoments, sampleCovariance, type CupedRatioStatistic, type MeanStatistic, type Moments } from './statistics.js';

type Vec = [number, number, number, number];
type Mat = Vec[];

function parts(s: CupedRatioStatistic): MeanStatistic[] {
  return [s.numerator_post, s.denominator_post, s.numerator_pre, s.denominator_pre];
}

function beta(s: CupedRatioStatistic): Vec {
  return parts(s).map((p) => meanMoments(p).mean) as Vec;
}

/** Λ: per-unit covariance of (m_post, d_post, m_pre, d_pre). */
function lambda(s: CupedRatioStatistic): Mat {
  const [mp, dp, mr, dr] = parts(s);
  const cov = (a: MeanStatistic, b: MeanStatistic, p: number): number => sampleCovariance(s.n, a.sum, b.sum, p);
  const v = (a: MeanStatistic): number => meanMoments(a).variance;
  const x = s.products;
  const c01 = cov(mp!, dp!, x.m_post_d_post);
  const c02 = cov(mp!, mr!, x.m_post_m_pre);
  const c03 = cov(mp!, dr!, x.m_post_d_pre);
  const c12 = cov(dp!, mr!, x.m_pre_d_post);
  const c13 = cov(dp!, dr!, x.d_post_d_pre);
  const c23 = cov(mr!, dr!, x.m_pre_d_pre);
  return [[v(mp!), c01, c02, c03], [c01, v(dp!), c12, c13], [c02, c12, v(mr!), c23], [c03, c13, c23, v(dr!)]];
}

function nabla(b: Vec, theta: number): Vec {
  if (b[1] === 0 || b[3] === 0) return [0, 0, 0, 0];
  return [1 / b[1], -b[0] / b[1] ** 2, -theta / b[3], (theta * b[2]) / b[3] ** 2];
}

/** uᵀ·M·w over index sets `iu` (rows) and `iw` (columns). */
function form(u: Vec, m: Mat, w: Vec, iu: number[], iw: number[]): number {
  let s = 0;
  for (const i of iu) for (const j of iw) s += u[i]! * m[i]![j]! * w[j]!;
  return s;
}

const ALL = [0, 1, 2, 3];
const POST = [0, 1];
const PRE = [2, 3];

function ratioOf(m: MeanStatistic, d: MeanStatistic): number {
  return d.sum === 0 ? 0 : m.sum / d.sum;
}

/** θ pooled over both arms. */
export function cupedRatioTheta(a: CupedRatioStatistic, b: CupedRatioStatistic): number {
  let cov = 0;
  let pre = 0;
  for (const s of [a, b]) {
    const g = nabla(beta(s), 1);
    const l = lambda(s);
    cov += form(g, l, g, PRE, POST);
    pre += form(g, l, g, PRE, PRE);
  }
  return pre === 0 ? 0 : -cov / pre;
}

/** Adjusted ratio and per-unit variance of one arm at `theta`. */
function armMoments(s: CupedRatioStatistic, theta: number): Moments {
  const post = ratioOf(s.numerator_post, s.denominator_post);
  const pre = ratioOf(s.numerator_pre, s.denominator_pre);
  const mean = s.denominator_post.sum === 0 || s.denominator_pre.sum === 0 ? 0 : post - theta * pre;
  const g = nabla(beta(s), theta);
  return { n: s.n, mean, variance: form(g, lambda(s), g, ALL, ALL) };
}

/** A regression-adjusted ratio comparison. */
export interface CupedRatioPair { t: Moments; c: Moments; effect: Effect; theta: number; theta_source: 'given' | 'estimated'; adjusted: boolean; control_unadjusted_mean: number; treatment_unadjusted_mean: number }

/** Compares treatment `t` with control `c` (θ estimated unless given). */
export function cupedRatioPair(t: CupedRatioStatistic, c: CupedRatioStatistic, type: DifferenceType, givenTheta: number | null = null): CupedRatioPair {
  const theta = givenTheta ?? cupedRatioTheta(c, t);
  const unadjusted = { control_unadjusted_mean: ratioOf(c.numerator_post, c.denominator_post), treatment_unadjusted_mean: ratioOf(t.numerator_post, t.denominator_post) };
  const source = givenTheta === null ? 'estimated' as const : 'given' as const;
  if (givenTheta === null && Math.abs(theta) < 1e-8) {
    const plain = (s: CupedRatioStatistic): Moments => ratioMoments({ type: 'ratio', n: s.n, numerator: s.numerator_post, denominator: s.denominator_post, sum_of_products: s.products.m_post_d_post });
    const tm = plain(t);
    const cm = plain(c);
    return { t: tm, c: cm, effect: effect(tm, cm, type, { absDenominator: true }), theta, theta_source: source, adjusted: false, ...unadjusted };
  }
  const tm = armMoments(t, theta);
  const cm = armMoments(c, theta);
  if (type === 'absolute') return { t: tm, c: cm, effect: effect(tm, cm, 'absolute'), theta, theta_source: source, adjusted: true, ...unadjusted };
  const ua = unadjusted.control_unadjusted_mean;
  const bc = beta(c);
  const delta = ua === 0 ? 0 : (tm.mean - cm.mean) / Math.abs(ua);
  let variance = 0;
  if (ua !== 0 && bc[1] !== 0) {
    const gAbs = (tm.mean - cm.mean) * Math.sign(ua);
    const den = Math.abs(ua);
    const gc = nabla(bc, theta);
    const na: Vec = [
      -(den + gAbs) / bc[1] / den ** 2,
      ((bc[0] * den) / bc[1] ** 2 + (bc[0] * gAbs) / bc[1] ** 2) / den ** 2,
      -gc[2] / den,
      -gc[3] / den,
    ];
    const nb = nabla(beta(t), theta).map((x) => x / den) as Vec;
    variance = form(na, lambda(c), na, ALL, ALL) / c.n + form(nb, lambda(t), nb, ALL, ALL) / t.n;
  }
  return { t: tm, c: cm, effect: { delta, variance }, theta, theta_source: source, adjusted: true, ...unadjusted };
}
