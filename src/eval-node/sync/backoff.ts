/**
 * Reconnect policy of the Watch client (STYLE.md rule 9; flagd's grpc_sync.go shape):
 *
 *   delay(n) = min(BACKOFF_CAP_MS, BACKOFF_BASE_MS × 2^n) × (1 − BACKOFF_JITTER × random())
 *
 * where n counts failed attempts since the last stream that delivered an event. Jitter spreads
 * a fleet of nodes reconnecting after a control-plane restart.
 */

/** First retry delay, in milliseconds. */
export const BACKOFF_BASE_MS = 250;
/** Longest retry delay, in milliseconds. */
export const BACKOFF_CAP_MS = 30_000;
/** Fraction of the delay that is randomised away (0 = none, 1 = full jitter). */
export const BACKOFF_JITTER = 0.5;

/** Backoff parameters (defaults above); tests shorten them. */
export interface BackoffPolicy { baseMs: number; capMs: number; jitter: number }

/** The default policy. */
export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: BACKOFF_BASE_MS, capMs: BACKOFF_CAP_MS, jitter: BACKOFF_JITTER });

/** Delay in ms before retry number `attempt` (0-based); `random` is injectable for tests. */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(exp * (1 - policy.jitter * random()));
}
