/**
 * The rollout comparison (research/posthog-flag-evaluation.md §2.2; Rust `flags/v1_bucketing.rs`):
 * a percentage becomes the threshold `rollout_percentage / 100` (one binary64 division), and a
 * hash is included when `hash <= threshold`. 100 % (or more) includes everyone without hashing.
 * Pinned by the harness threshold vectors (test/evaluation/hash.test.ts).
 */

/** `rollout_percentage / 100` in binary64 (not the parsed decimal literal: 33.34 / 100 ≠ 0.3334). */
export function rolloutThreshold(rolloutPercentage: number): number {
  return rolloutPercentage / 100;
}

/** True when no hash is needed: the share is 100 % or more. */
export function isFullRollout(rolloutPercentage: number): boolean {
  return rolloutPercentage >= 100;
}

/** True when hash `h` in [0, 1] is inside `threshold` (inclusive). */
export function withinRollout(h: number, threshold: number): boolean {
  return h <= threshold;
}
