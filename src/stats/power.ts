/**
 * Sample size and running time (research/experiments.md §4.10).
 *
 * - PostHog's rule (posthog.com "sample size and running time"): per variant N = 16·σ²/d² with
 *   d = MDE × baseline; σ² = p(1 − p) for a conversion (funnel) baseline p, 2 × baseline for a
 *   count, 0.25 × baseline² for a sum or average.
 * - Power of a two-sided test for a relative lift (GrowthBook's formula): per-arm n = N/arms,
 *   SE from the relative-effect variance, power = 1 − Φ(z − Δ/SE) + Φ(−z − Δ/SE).
 * Running time = total sample / exposures per day, rounded up.
 */
import { normalCdf, normalQuantile } from './distributions.js';

/** Kinds of baseline the PostHog rule knows. */
export type BaselineKind = 'conversion' | 'count' | 'mean';

/** Input of {@link sampleSize}. */
export interface SampleSizeInput {
  kind: BaselineKind;
  /** Conversion rate (0..1), events per user, or mean value per user. */
  baseline: number;
  /** Minimum detectable effect, relative (0.3 = 30 %; PostHog's default). */
  mde?: number;
  variants?: number;
  /** Exposures per day, for the running time. */
  exposures_per_day?: number;
}

/** Result of {@link sampleSize}. */
export interface SampleSizeResult { per_variant: number; total: number; running_time_days: number | null }

/** PostHog's sample size (Lehr's rule) and running time. @throws RangeError for a baseline or MDE out of range. */
export function sampleSize(input: SampleSizeInput): SampleSizeResult {
  const mde = input.mde ?? 0.3;
  const variants = input.variants ?? 2;
  if (!(input.baseline > 0) || (input.kind === 'conversion' && input.baseline >= 1)) throw new RangeError('baseline must be positive (and below 1 for a conversion rate).');
  if (!(mde > 0)) throw new RangeError('mde must be positive.');
  const sigma2 = input.kind === 'conversion' ? input.baseline * (1 - input.baseline) : input.kind === 'count' ? 2 * input.baseline : 0.25 * input.baseline ** 2;
  const d = mde * input.baseline;
  // Rounded up, ignoring binary-fraction noise (16·0.09/0.0004 is 3600, not 3600.0000000000005).
  const perVariant = Math.ceil((16 * sigma2) / (d * d) - 1e-9);
  const total = perVariant * variants;
  const perDay = input.exposures_per_day;
  return { per_variant: perVariant, total, running_time_days: perDay && perDay > 0 ? Math.ceil(total / perDay) : null };
}

/** Power to detect relative lift `lift` over a control with `mean` and per-unit `variance`, N users over `arms`, level `alpha`. */
export function power(mean: number, variance: number, lift: number, totalUsers: number, arms = 2, alpha = 0.05): number {
  const n = totalUsers / arms;
  const tMean = mean * (1 + lift);
  const se = Math.sqrt(variance / (n * mean * mean) + (tMean * tMean * variance) / (n * mean ** 4));
  const z = normalQuantile(1 - alpha / 2);
  return 1 - normalCdf(z - lift / se) + normalCdf(-z - lift / se);
}
