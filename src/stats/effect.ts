/**
 * The difference between a treatment and the control and its variance (research/experiments.md
 * §4.1): absolute Δ = m_T − m_C, V = v_T/n_T + v_C/n_C; relative Δ = (m_T − m_C)/D,
 * V = v_T/(n_T·D²) + m_T²·v_C/(n_C·D⁴) with D = m_C (PostHog) or |m_C| (GrowthBook, the
 * `engine: "growthbook"` or `abs_denominator` option). With CUPED, D is the unadjusted control
 * mean (`denominator`). Both are fractions: a relative Δ of 0.05 is a 5 % lift.
 */
import type { Moments } from './statistics.js';

/** Which scale the effect is on. */
export type DifferenceType = 'relative' | 'absolute';

/** An effect and its variance. */
export interface Effect { delta: number; variance: number }

/** Thrown when one comparison cannot be computed (a zero control mean on the relative scale, no variance). */
export class StatsError extends Error {}

/** Δ and V of `t` against `c`. @throws StatsError for a relative effect over |D| < 1e-10. */
export function effect(t: Moments, c: Moments, type: DifferenceType, opts: { denominator?: number; absDenominator?: boolean } = {}): Effect {
  if (t.n <= 0 || c.n <= 0) throw new StatsError('Both arms need at least one sample.');
  if (type === 'absolute') return { delta: t.mean - c.mean, variance: t.variance / t.n + c.variance / c.n };
  let d = opts.denominator ?? c.mean;
  if (opts.absDenominator) d = Math.abs(d);
  if (Math.abs(d) < 1e-10) throw new StatsError('The control mean is zero: a relative effect is undefined.');
  return {
    delta: (t.mean - c.mean) / d,
    variance: t.variance / (t.n * d * d) + (t.mean * t.mean * c.variance) / (c.n * d ** 4),
  };
}
