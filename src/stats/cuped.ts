/**
 * CUPED variance reduction as PostHog computes it (research/experiments.md §4.6; PostHog
 * `stats/shared/cuped.py`): θ = Cov(y, x)/Var(x) pooled over both arms with (n − 1), 0 when
 * Var(x) < 1e-10; per arm ȳ_adj = ȳ − θ·x̄ (not centred: PostHog's vector ph-cuped-freq-rel
 * confirms it), v_adj = max(v_y + θ²·v_x − 2θ·c_xy, 1e-10).
 * The adjusted arms are sample means; a relative effect divides by the UNADJUSTED control mean.
 * In multi-arm experiments θ is computed per (treatment, control) pair.
 */
import { meanMoments, type CupedStatistic, type Moments } from './statistics.js';

/** Smallest variance an adjusted arm keeps. */
const MIN_VARIANCE = 1e-10;

/** θ over the pooled arms. */
export function cupedTheta(a: CupedStatistic, b: CupedStatistic): number {
  const n = a.n + b.n;
  if (n < 2) return 0;
  const sy = a.post.sum + b.post.sum;
  const sx = a.pre.sum + b.pre.sum;
  const sxx = a.pre.sum_squares + b.pre.sum_squares;
  const sxy = a.post_pre_sum_of_products + b.post_pre_sum_of_products;
  const varX = (sxx - (sx * sx) / n) / (n - 1);
  if (varX < MIN_VARIANCE) return 0;
  const covXY = (sxy - (sx * sy) / n) / (n - 1);
  return covXY / varX;
}

/** One arm adjusted by θ. */
export function cupedAdjust(s: CupedStatistic, theta: number): Moments {
  const y = meanMoments(s.post);
  const x = meanMoments(s.pre);
  const cov = s.n > 1 ? (s.post_pre_sum_of_products - (s.post.sum * s.pre.sum) / s.n) / (s.n - 1) : 0;
  return {
    n: s.n,
    mean: y.mean - theta * x.mean,
    variance: Math.max(y.variance + theta * theta * x.variance - 2 * theta * cov, MIN_VARIANCE),
  };
}

/** Both arms adjusted, plus the unadjusted control mean (the relative denominator). */
export function cupedPair(t: CupedStatistic, c: CupedStatistic): { t: Moments; c: Moments; controlMean: number; theta: number } {
  const theta = cupedTheta(t, c);
  return { t: cupedAdjust(t, theta), c: cupedAdjust(c, theta), controlMean: meanMoments(c.post).mean, theta };
}
