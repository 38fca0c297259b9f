/**
 * Sample-ratio mismatch (research/experiments.md §4.7): Pearson's χ² goodness of fit of the
 * observed exposures against the expected shares, df = k − 1. Arms with a share ≤ 0 are left
 * out; fewer than two arms or no users gives p = 1. PostHog computes it only from 100 exposures
 * and warns below p = 0.001.
 */
import { chiSquareSurvival } from './distributions.js';

/** p below which a mismatch is reported. */
export const SRM_THRESHOLD = 0.001;
/** Fewest exposures PostHog checks. */
export const SRM_MIN_EXPOSURES = 100;

/** Result of the check. */
export interface SrmResult { p_value: number; chi_squared: number; expected: number[]; mismatch: boolean }

/** χ² test of `observed` counts against `weights` (any positive scale). */
export function sampleRatioMismatch(observed: readonly number[], weights: readonly number[]): SrmResult {
  const arms = observed.map((o, i) => ({ o, w: weights[i] ?? 0 })).filter((a) => a.w > 0);
  const total = arms.reduce((s, a) => s + a.o, 0);
  const weightSum = arms.reduce((s, a) => s + a.w, 0);
  const expected = observed.map((_, i) => ((weights[i] ?? 0) > 0 && weightSum > 0 ? (total * (weights[i] ?? 0)) / weightSum : 0));
  if (arms.length < 2 || total === 0) return { p_value: 1, chi_squared: 0, expected, mismatch: false };
  const chi = arms.reduce((s, a) => {
    const e = (total * a.w) / weightSum;
    return s + ((a.o - e) ** 2) / e;
  }, 0);
  const p = chiSquareSurvival(chi, arms.length - 1);
  return { p_value: p, chi_squared: chi, expected, mismatch: p < SRM_THRESHOLD };
}
