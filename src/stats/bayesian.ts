/**
 * Bayesian comparison (research/experiments.md §4.3; PostHog `stats/bayesian`, GrowthBook
 * `gbstats/bayesian`): Gaussian likelihood N(Δ, V); PostHog's default prior is flat, so the
 * posterior is N(Δ, V); a proper prior N(μ₀, σ₀²) gives τ = 1/V + 1/σ₀², μ = (Δ/V + μ₀/σ₀²)/τ,
 * σ² = 1/τ. Chance to win = P(θ > 0) (P(θ < 0) when lower is better); credible interval
 * Φ⁻¹(α/2), Φ⁻¹(1 − α/2) with α = 1 − ci_level; significant when the chance to win is above
 * ci_level or below 1 − ci_level. Risk (expected loss, GrowthBook's; PostHog computes it but does
 * not return it): [P(θ>0)·E[θ | θ>0], P(θ<0)·|E[θ | θ<0]|] = [risk of keeping control, risk of
 * shipping the treatment], in the effect's unit (a fraction for relative effects); beyond
 * |μ/σ| > 37 it is GrowthBook's limit [max(μ, 0), max(−μ, 0)]. The prior is on the effect's own
 * scale; analyze-compare.ts rescales a relative prior for an absolute analysis (GrowthBook).
 */
import { normalCdf, normalPdf, normalQuantile } from './distributions.js';
import { StatsError, type Effect } from './effect.js';

/** A proper normal prior on the effect. */
export interface Prior { mean: number; stddev: number }

/** Result of a Bayesian comparison. */
export interface BayesianResult {
  point_estimate: number;
  posterior_sd: number;
  chance_to_win: number;
  credible_interval: [number, number];
  significant: boolean;
  risk: [number, number];
}

/** Posterior of effect `e` and what it says. @throws StatsError without variance. */
export function bayesian(e: Effect, ciLevel: number, opts: { prior?: Prior | null; lowerIsBetter?: boolean } = {}): BayesianResult {
  if (!(e.variance > 0)) throw new StatsError('The effect has no variance.');
  if (!(ciLevel > 0 && ciLevel < 1)) throw new StatsError('ci_level must be between 0 and 1.');
  let mu = e.delta;
  let sd = Math.sqrt(e.variance);
  if (opts.prior) {
    const tau = 1 / e.variance + 1 / opts.prior.stddev ** 2;
    mu = (e.delta / e.variance + opts.prior.mean / opts.prior.stddev ** 2) / tau;
    sd = Math.sqrt(1 / tau);
  }
  const up = 1 - normalCdf(0, mu, sd);
  const chance = opts.lowerIsBetter ? 1 - up : up;
  const alpha = 1 - ciLevel;
  const z = mu / sd;
  const tail = sd * normalPdf(z);
  const extreme = Math.abs(z) > 37;
  const riskControl = extreme ? Math.max(mu, 0) : up * mu + tail; // P(θ>0)·E[θ|θ>0]
  const riskTreatment = extreme ? Math.max(-mu, 0) : (1 - up) * -mu + tail; // P(θ<0)·|E[θ|θ<0]|
  return {
    point_estimate: mu, posterior_sd: sd, chance_to_win: chance,
    credible_interval: [normalQuantile(alpha / 2, mu, sd), normalQuantile(1 - alpha / 2, mu, sd)],
    significant: chance > ciLevel || chance < 1 - ciLevel,
    risk: opts.lowerIsBetter ? [riskTreatment, riskControl] : [riskControl, riskTreatment],
  };
}
