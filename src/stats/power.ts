/**
 * Sample size (PostHog) and power / minimum detectable effect (GrowthBook), research/experiments.md
 * §4.10.
 *
 * - `sampleSize`, PostHog's running-time calculator (`frontend/src/scenes/experiments/
 *   RunningTimeCalculator/calculations.ts`): N = 16·σ²/d² per variant with d = MDE × baseline,
 *   σ² = p(1 − p) for a funnel (conversion) baseline p, 2 × baseline for a count, 0.25 × baseline²
 *   for a sum or average, and the delta-method variance of the baseline's ratio (population
 *   moments, as PostHog's calculator) for a ratio or retention metric; the recommended total is
 *   ⌈N × variants⌉; running time = total / exposures per day (days, not rounded).
 * - `powerAndMde`, GrowthBook's power calculator (`packages/shared/src/power/power.ts`): per-arm
 *   n = N/variations, relative-lift variance σ²/(n·μ²) + σ²·μ_T²/(n·μ⁴) with μ_T = μ(1 + lift);
 *   power = 1 − Φ(z₁₋α/₂ − lift/SE) + Φ(−z₁₋α/₂ − lift/SE); the MDE solves the quadratic for 80 %
 *   (or `target_power`). With a sequential tuning parameter the variance is inflated by
 *   (z_seq/z₁₋α/₂)² where z_seq = √n₂·√(2r·ln(√r/α)/(n₂ρ)²) at n₂ = 2N/variations.
 * Every MDE and lift is a relative fraction (0.05 = 5 %).
 */
import { normalCdf, normalQuantile } from './distributions.js';
import { sequentialRho } from './sequential.js';

/** PostHog's baseline kinds (and their aliases). */
export const SAMPLE_SIZE_KINDS: Record<string, 'funnel' | 'count' | 'sum' | 'ratio'> = {
  funnel: 'funnel', conversion: 'funnel', proportion: 'funnel', count: 'count', mean_count: 'count',
  sum: 'sum', mean: 'sum', mean_sum_or_avg: 'sum', ratio: 'ratio', retention: 'ratio',
};

/** A ratio metric's baseline sums (PostHog's response names). */
export interface RatioBaseline { n: number; sum: number; sum_squares: number; denominator_sum: number; denominator_sum_squares: number; numerator_denominator_sum_product: number }

/** Result of {@link sampleSize}. */
export interface SampleSizeResult { kind: string; baseline: number; variance: number; per_variant: number; total: number; running_time_days: number | null }

/** Baseline ratio and its delta-method variance with population moments (PostHog's calculator). */
export function ratioBaseline(b: RatioBaseline): { baseline: number; variance: number } {
  const mM = b.sum / b.n;
  const mD = b.denominator_sum / b.n;
  const vM = b.sum_squares / b.n - mM ** 2;
  const vD = b.denominator_sum_squares / b.n - mD ** 2;
  const cov = b.numerator_denominator_sum_product / b.n - mM * mD;
  return { baseline: b.sum / b.denominator_sum, variance: vM / mD ** 2 + (mM ** 2 * vD) / mD ** 4 - (2 * mM * cov) / mD ** 3 };
}

/** PostHog's sample size for `kind` at relative `mde` over `variants`; `baseline`/`variance` as the kind defines them. */
export function sampleSize(kind: 'funnel' | 'count' | 'sum' | 'ratio', baseline: number, variance: number | null, mde: number, variants: number, perDay: number | null): SampleSizeResult {
  const d = mde * baseline;
  const v = kind === 'funnel' ? baseline * (1 - baseline) : kind === 'count' ? 2 * baseline : kind === 'sum' ? 0.25 * baseline ** 2 : variance!;
  const n = kind === 'funnel' ? (16 * baseline * (1 - baseline)) / d ** 2 : (16 * v) / d ** 2;
  const total = Math.ceil(n * variants);
  return { kind, baseline, variance: v, per_variant: Math.ceil(n), total, running_time_days: perDay !== null ? total / perDay : null };
}

/** A metric for the power calculator: a mean with its standard deviation, or a conversion rate. */
export type PowerMetric = { type: 'mean'; mean: number; standardDeviation: number } | { type: 'binomial'; conversionRate: number };

function meanOf(m: PowerMetric): number {
  return m.type === 'mean' ? m.mean : m.conversionRate;
}

function varianceOf(m: PowerMetric): number {
  return m.type === 'mean' ? m.standardDeviation ** 2 : m.conversionRate * (1 - m.conversionRate);
}

function relativeVariance(v: number, mean: number, lift: number, nPerArm: number): number {
  const mT = mean * (1 + lift);
  return v / (mean ** 2 * nPerArm) + (v * mT ** 2) / (mean ** 4 * nPerArm);
}

/** GrowthBook's sequential inflation: the per-unit variance a fixed-horizon formula should use. */
function sequentialVariance(variance: number, n: number, alpha: number, tuning: number): number {
  const rho = sequentialRho(alpha, tuning);
  const r = n * rho * rho + 1;
  const zSeq = Math.sqrt(n) * Math.sqrt((2 * r * Math.log(Math.sqrt(r) / alpha)) / (n * rho) ** 2);
  const se = (Math.sqrt(variance / n) * zSeq) / normalQuantile(1 - 0.5 * alpha);
  return n * se * se;
}

/** Power to detect relative `lift` with `users` in all over `variations` arms (two-sided, level `alpha`). */
export function power(metric: PowerMetric, lift: number, users: number, variations: number, alpha: number, tuning: number | null): number {
  const nPerArm = users / variations;
  let v = relativeVariance(varianceOf(metric), meanOf(metric), lift, nPerArm);
  if (tuning !== null) v = sequentialVariance(v, (2 * users) / variations, alpha, tuning);
  const z = normalQuantile(1 - 0.5 * alpha);
  const std = lift / Math.sqrt(v);
  return 1 - normalCdf(z - std) + normalCdf(-z - std);
}

/** Smallest relative lift detectable with `targetPower`; null with a reason when none exists. */
export function minimumDetectableEffect(metric: PowerMetric, targetPower: number, users: number, variations: number, alpha: number, tuning: number | null): { mde: number | null; error?: string } {
  if (targetPower <= alpha) return { mde: null, error: 'power must be greater than alpha.' };
  const nA = users / variations;
  const z = normalQuantile(1 - 0.5 * alpha) - normalQuantile(1 - targetPower);
  const m = meanOf(metric);
  let v = varianceOf(metric);
  if (tuning !== null) v = sequentialVariance(v, 2 * nA, alpha, tuning);
  if (nA <= (v * z ** 2) / m ** 2) return { mde: null, error: 'need to increase number of users or reduce number of variations.' };
  const s2 = v / nA;
  const a = 1 - (z ** 2 * s2) / m ** 2;
  const b = -2 * m;
  const c = m ** 2 - z ** 2 * s2;
  const root = (-b + Math.sqrt(b ** 2 - 4 * a * c)) / (2 * a);
  return { mde: (root - m) / m };
}
