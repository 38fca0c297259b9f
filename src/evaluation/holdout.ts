/**
 * Holdouts (research/posthog-flag-evaluation.md §2.5, §4 step 3; Rust `flags/flag_matching.rs`).
 *
 * Membership hash: `hash01("holdout-", id, "")`; the flag key is not part of it, so a person is in
 * or out of a given percentage for every flag. An empty identifier is hashed too (no 0.0
 * short-circuit, unlike rollout). Two formats:
 * - new `filters.holdout = {id, exclusion_percentage}`: pct is clamped to [0, 100]; a member gets
 *   variant `"holdout-{id}"` and payload `payloads["holdout-{id}"]`;
 * - legacy `filters.holdout_groups[0]` (first element only; non-empty `properties` mean "no
 *   holdout"): pct = its rollout_percentage (null = 100); the variant is its `variant` if set,
 *   else the flag's hashed variant, else `"holdout"`.
 * When both are present the new format wins (it is what the current service reads).
 */
import { isFullRollout, rolloutThreshold, withinRollout } from './bucketing.js';
import { hashPrefix, hashPrefixed } from './hash.js';

const HOLDOUT_PREFIX = hashPrefix('holdout-');
const EMPTY = new Uint8Array(0);

/** A compiled holdout. */
export interface CompiledHoldout {
  /** exclusion share / 100. */
  readonly threshold: number;
  /** Share is 100 %: everyone is a member, no hash needed. */
  readonly everyone: boolean;
  /** Fixed variant of a member; null = legacy fallback (hashed variant, else "holdout"). */
  readonly variant: string | null;
}

/** Thrown for a malformed holdout; `field` names it. */
export class HoldoutDefinitionError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
  }
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Compiles `filters.holdout` / `filters.holdout_groups`; null when the flag has no holdout.
 * Throws {@link HoldoutDefinitionError} for a malformed one.
 */
export function compileHoldout(filters: Record<string, unknown>): CompiledHoldout | null {
  const h = filters.holdout;
  if (h !== undefined && h !== null) {
    if (!isObj(h)) throw new HoldoutDefinitionError('filters.holdout', 'must be an object');
    if (typeof h.id !== 'number' || !Number.isInteger(h.id)) throw new HoldoutDefinitionError('filters.holdout.id', 'must be an integer');
    const pctRaw = h.exclusion_percentage;
    if (typeof pctRaw !== 'number' || !Number.isFinite(pctRaw)) {
      throw new HoldoutDefinitionError('filters.holdout.exclusion_percentage', 'must be a number');
    }
    const pct = Math.min(100, Math.max(0, pctRaw));
    return { threshold: rolloutThreshold(pct), everyone: isFullRollout(pct), variant: `holdout-${h.id}` };
  }
  const groups = filters.holdout_groups;
  if (groups === undefined || groups === null) return null;
  if (!Array.isArray(groups)) throw new HoldoutDefinitionError('filters.holdout_groups', 'must be an array');
  if (groups.length === 0) return null;
  const g = groups[0];
  if (!isObj(g)) throw new HoldoutDefinitionError('filters.holdout_groups[0]', 'must be an object');
  if (Array.isArray(g.properties) && g.properties.length > 0) return null;
  const r = g.rollout_percentage;
  if (r !== undefined && r !== null && (typeof r !== 'number' || !Number.isFinite(r))) {
    throw new HoldoutDefinitionError('filters.holdout_groups[0].rollout_percentage', 'must be a number or null');
  }
  const v = g.variant;
  if (v !== undefined && v !== null && typeof v !== 'string') {
    throw new HoldoutDefinitionError('filters.holdout_groups[0].variant', 'must be a string or null');
  }
  const pct = typeof r === 'number' ? r : 100;
  return { threshold: rolloutThreshold(pct), everyone: isFullRollout(pct), variant: typeof v === 'string' ? v : null };
}

/** True when identifier bytes `id` fall into the holdout. */
export function inHoldout(holdout: CompiledHoldout, id: Uint8Array | null): boolean {
  if (holdout.everyone) return true;
  return withinRollout(hashPrefixed(HOLDOUT_PREFIX, id ?? EMPTY, EMPTY), holdout.threshold);
}
