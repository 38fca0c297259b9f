/**
 * One flag for one request: Rust `get_match` (research/posthog-flag-evaluation.md §4 "Per flag";
 * Rust `flags/flag_matching.rs`), in this order:
 *
 * 1. failed definition → failed entry; broken dependency → false / `missing_dependency` / null;
 *    continuity flag while the hash-key-override lookup failed → failed `hash_key_override_error`.
 * 2. Early access: `feature_enrollment` (property `$feature_enrollment/<key>` present → enabled iff
 *    `true` or `"true"`) or legacy `super_groups[0]` (any of its keys present → evaluate that set);
 *    reason `super_condition_value`, index 0, payload `payloads["true"]`, variant null.
 * 3. Holdout (holdout.ts): a member gets `holdout_condition_value`, index null.
 * 4. Condition sets in stored order; the best reason so far is replaced by one whose score is ≥
 *    (ties go to the later set), starting from `no_group_type` / null (so a group flag called
 *    without its group answers `no_group_type` with the index of its last set):
 *    group set without a group key → `no_group_type`; device-id set without `$device_id` whose
 *    answer depends on the hash → `out_of_rollout_bound`; flag filters, property filters, then
 *    cohort filters (first failure → `no_condition_match`); rollout hash (miss →
 *    `out_of_rollout_bound`); else match: override variant, else hashed variant, else none.
 *
 * Hashing (research §2): rollout `hash(key + ".", id, "")` only below 100 %, variant
 * `hash(key + ".", id, "variant")` only after a match without a valid override; an empty
 * identifier hashes to 0.0 without hashing (Rust only), so it is always in and gets the first
 * variant with a non-zero share.
 */
import { withinRollout } from './bucketing.js';
import { inCohort } from './cohorts.js';
import type { CompiledCondition, CompiledFlag, FlagCheck } from './compiled.js';
import type { RequestScope } from './context.js';
import { hashId, ROLLOUT_SALT, VARIANT_SALT, type Utf8Id } from './hash.js';
import { inHoldout } from './holdout.js';
import { ERROR_CODES, REASONS } from './reasons.js';
import type { FlagReason, FlagResult, FlagResultMetadata } from './types.js';
import { pickVariantIndex } from './variants.js';

const hasOwn = Object.prototype.hasOwnProperty;

const fixedReason = (code: keyof typeof REASONS, index: number | null): FlagReason =>
  Object.freeze({ code, condition_index: index, description: REASONS[code].description });
const R_MISSING_DEPENDENCY = fixedReason('missing_dependency', null);
const R_NO_GROUP_TYPE = fixedReason('no_group_type', null);
const R_HOLDOUT = fixedReason('holdout_condition_value', null);
const R_SUPER = fixedReason('super_condition_value', 0);

/** A failed entry (research §4 "Errors"): disabled, no variant, no payload, index null. */
export function failedResult(flag: CompiledFlag, code: string, description: string): FlagResult {
  return {
    key: flag.key, enabled: false, variant: null, failed: true,
    reason: { code, condition_index: null, description },
    metadata: flag.metadataNoPayload,
  };
}

/** Distinct results a flag memoizes; beyond it (pathological holdout variants) results are built per call. */
const MAX_SHARED_RESULTS = 64;

/**
 * The (frozen, shared) result with these fields. Every argument is a compiled constant (reasons and
 * metadata are frozen per condition and payload key; variants come from the variant table), so a
 * flag has a handful of distinct results: a short identity scan of `flag.results` replaces an
 * allocation per flag per request (cpu/heap profile of bench/flags.ts: result objects were the
 * largest source of garbage after the response body). Callers must not mutate results (types.ts).
 */
function result(flag: CompiledFlag, enabled: boolean, variant: string | null, reason: FlagReason, meta: FlagResultMetadata): FlagResult {
  const memo = flag.results;
  for (let i = 0; i < memo.length; i++) {
    const r = memo[i]!;
    if (r.reason === reason && r.variant === variant && r.enabled === enabled && r.metadata === meta) return r;
  }
  const r: FlagResult = Object.freeze({ key: flag.key, enabled, variant, reason, metadata: meta });
  if (memo.length < MAX_SHARED_RESULTS) memo.push(r);
  return r;
}

/**
 * Result slots of a condition set ({@link CompiledCondition.results}): each reason the set can
 * give, and a match with no variant, with the override variant, or with variant i of the flag's
 * table (`K_MATCH_VARIANT + i`). Every argument of `result` is fixed by (set, slot), so a slot
 * holds the memo's result once seen and the next request reads it instead of scanning the memo
 * (cpu-prof of bench/flags-handler.ts: the scan's loads were 4 % of a request).
 */
const K_OUT_OF_ROLLOUT = 0;
const K_NO_MATCH = 1;
const K_NO_MATCH_GROUPS_SKIPPED = 2;
const K_NO_GROUP = 3;
const K_MATCH = 4;
const K_MATCH_OVERRIDE = 5;
const K_MATCH_VARIANT = 6;

/** {@link result} through the set's slot `kind` (the other arguments must be the ones that slot stands for). */
function conditionResult(flag: CompiledFlag, cond: CompiledCondition, kind: number, enabled: boolean, variant: string | null,
  reason: FlagReason, meta: FlagResultMetadata): FlagResult {
  const slots = cond.results;
  const known = slots[kind];
  if (known !== undefined) return known;
  const r = result(flag, enabled, variant, reason, meta);
  slots[kind] = r;
  return r;
}

function metaFor(flag: CompiledFlag, payloadKey: string): FlagResultMetadata {
  return flag.metadataByPayloadKey.get(payloadKey) ?? flag.metadataNoPayload;
}

/** Flag-dependency filter test (research §3.5). */
function dependencyMatches(value: boolean | string, check: FlagCheck): boolean {
  const e = check.expected;
  if (e === true) return value !== false;
  if (e === false) return value === false;
  if (typeof e === 'string') return value === e;
  return false;
}

/**
 * Flag, property and cohort filters of one set; true when all pass. Operator errors count as
 * false. A set whose filters other flags' sets share is tested once per request (its outcome kept
 * in the scope's shared outcomes): the workload's ten `email icontains` flags cost one test.
 */
function filtersPass(cond: CompiledCondition, scope: RequestScope): boolean {
  const s = cond.sharedFilter;
  if (s < 0) return testFilters(cond, scope);
  const known = scope.sharedOutcome(s);
  if (known !== 0) return known === 1;
  const ok = testFilters(cond, scope);
  scope.setSharedOutcome(s, ok);
  return ok;
}

function testFilters(cond: CompiledCondition, scope: RequestScope): boolean {
  const fcs = cond.flagChecks;
  for (let i = 0; i < fcs.length; i++) {
    const fc = fcs[i]!;
    if (fc.slot < 0 || !dependencyMatches(scope.values[fc.slot]!, fc)) return false;
  }
  const pcs = cond.propertyChecks;
  for (let i = 0; i < pcs.length; i++) {
    const pc = pcs[i]!;
    let props: Readonly<Record<string, unknown>>;
    if (pc.group) {
      if (pc.groupTypeName === null) return false; // unresolvable group type: fails closed
      props = scope.groupProperties(pc.groupTypeName);
    } else {
      props = scope.personProperties();
    }
    let ok: boolean;
    try {
      ok = pc.filter.test(props, scope.nowMs);
    } catch {
      ok = false;
    }
    if (!ok) return false;
  }
  const ccs = cond.cohortChecks;
  if (ccs.length > 0) {
    const cs = scope.cohorts();
    for (let i = 0; i < ccs.length; i++) {
      const cc = ccs[i]!;
      if (inCohort(cs, cc.cohortId) === cc.negate) return false;
    }
  }
  return true;
}

/**
 * The index into the flag's variant keys of the variant `id` hashes to (the table's constant
 * variant without an id), -1 for no variant (also when the flag has no variants).
 */
function variantIndex(flag: CompiledFlag, id: Utf8Id | null): number {
  const table = flag.variants;
  if (table === null) return -1;
  if (id === null) {
    const c = table.constant;
    return c === undefined || c === null ? -1 : table.keys.indexOf(c);
  }
  const h = id.bytes.length === 0 ? 0 : hashId(flag.hashPrefix, id, VARIANT_SALT);
  return pickVariantIndex(table, h);
}

/** The variant `id` hashes to ({@link variantIndex}), or null. */
function variantFor(flag: CompiledFlag, id: Utf8Id | null): string | null {
  const i = variantIndex(flag, id);
  return i < 0 ? null : flag.variants!.keys[i]!;
}

/** Whether a person set's answer can depend on the identifier (device-id rule, research §2.4). */
function dependsOnHash(flag: CompiledFlag, cond: CompiledCondition): boolean {
  if (!cond.fullRollout) return true;
  if (cond.variantOverride !== null || flag.variants === null) return false;
  return flag.variants.constant === undefined;
}

/**
 * Person identifier (Rust `hashed_identifier`): `$device_id` for device-id flags; else the stored
 * hash-key override for this flag key (when `useOverride`; Rust applies it whenever the lookup
 * returned one); else, for continuity flags, `$anon_distinct_id`; else `distinct_id`.
 * A device-id flag without `$device_id` falls through to the rest of the chain; condition sets
 * do not use that fallback (they are skipped instead, see `matchFlag`).
 */
function personId(flag: CompiledFlag, scope: RequestScope, useOverride: boolean): Utf8Id {
  if (flag.bucketByDevice) {
    const d = scope.device();
    if (d !== null) return d;
  }
  return scope.personId(flag.key, flag.continuity, useOverride);
}

/** Evaluates one live compiled flag for the request in `scope` (module doc for the order). */
export function matchFlag(flag: CompiledFlag, scope: RequestScope): FlagResult {
  if (flag.failure !== null) return failedResult(flag, flag.failure.code, flag.failure.description);
  if (flag.missingDependency) return result(flag, false, null, R_MISSING_DEPENDENCY, flag.metadataNoPayload);

  if (flag.continuity && scope.stored.hash_key_overrides_failed === true) {
    // research §2.6 step 3: every continuity flag, whatever its aggregation or bucketing.
    return failedResult(flag, 'hash_key_override_error', ERROR_CODES.hash_key_override_error);
  }
  // Flag-level group key; null when missing (holdouts then hash the bare "holdout-", as Rust does).
  const flagGroupId = flag.aggregation === null ? null : scope.groupId(flag.groupTypeName);

  const gate = flag.enrollment;
  if (gate !== null) {
    const person = scope.personProperties();
    if (gate.kind === 'feature_enrollment') {
      if (hasOwn.call(person, gate.propertyKey)) {
        const v = person[gate.propertyKey];
        return result(flag, v === true || v === 'true', null, R_SUPER, metaFor(flag, 'true'));
      }
    } else if (gate.propertyKeys.some((k) => hasOwn.call(person, k))) {
      // Super conditions are person-level even on group flags (Rust `is_super_condition_match`).
      const cond = gate.condition;
      let matched = filtersPass(cond, scope);
      if (matched && !cond.fullRollout) {
        const id = personId(flag, scope, true);
        matched = id.bytes.length === 0 || withinRollout(hashId(flag.hashPrefix, id, ROLLOUT_SALT), cond.threshold);
      }
      return result(flag, matched, null, R_SUPER, metaFor(flag, 'true'));
    }
  }

  const holdout = flag.holdout;
  if (holdout !== null) {
    // Flag-level identifier without the stored hash-key override (research §2.5).
    const id = flag.aggregation === null ? personId(flag, scope, false) : flagGroupId;
    if (inHoldout(holdout, id === null ? null : id.bytes)) {
      const variant = holdout.variant ?? variantFor(flag, id) ?? 'holdout';
      return result(flag, true, variant, R_HOLDOUT, metaFor(flag, variant));
    }
  }

  let best: FlagReason = R_NO_GROUP_TYPE;
  let bestScore: number = REASONS.no_group_type.score;
  // The set `best` came from and which of its reasons it is (its result slot), null for R_NO_GROUP_TYPE.
  let bestCond: CompiledCondition | null = null;
  let bestKind = 0;
  let skippedGroup = false;
  const conds = flag.conditions;
  for (let i = 0; i < conds.length; i++) {
    const cond = conds[i]!;
    let id: Utf8Id | null;
    if (cond.aggregation !== null) {
      id = cond.aggregation === flag.aggregation ? flagGroupId : scope.groupId(cond.groupTypeName);
      if (id === null) {
        skippedGroup = true;
        if (REASONS.no_group_type.score >= bestScore) { best = cond.reasons.noGroup; bestScore = REASONS.no_group_type.score; bestCond = cond; bestKind = K_NO_GROUP; }
        continue;
      }
    } else if (flag.bucketByDevice) {
      id = scope.device();
      if (id === null && dependsOnHash(flag, cond)) {
        if (REASONS.out_of_rollout_bound.score >= bestScore) { best = cond.reasons.outOfRollout; bestScore = REASONS.out_of_rollout_bound.score; bestCond = cond; bestKind = K_OUT_OF_ROLLOUT; }
        continue;
      }
    } else {
      id = scope.personId(flag.key, flag.continuity, true);
    }
    if (!filtersPass(cond, scope)) {
      if (REASONS.no_condition_match.score >= bestScore) { best = cond.reasons.noMatch; bestScore = REASONS.no_condition_match.score; bestCond = cond; bestKind = K_NO_MATCH; }
      continue;
    }
    if (!cond.fullRollout && id !== null) {
      const h = id.bytes.length === 0 ? 0 : hashId(flag.hashPrefix, id, ROLLOUT_SALT);
      if (!withinRollout(h, cond.threshold)) {
        // early_exit: the first set whose properties match decides, in or out of its rollout.
        if (flag.earlyExit) return conditionResult(flag, cond, K_OUT_OF_ROLLOUT, false, null, cond.reasons.outOfRollout, flag.metadataNoPayload);
        if (REASONS.out_of_rollout_bound.score >= bestScore) { best = cond.reasons.outOfRollout; bestScore = REASONS.out_of_rollout_bound.score; bestCond = cond; bestKind = K_OUT_OF_ROLLOUT; }
        continue;
      }
    }
    if (cond.variantOverride !== null) {
      return conditionResult(flag, cond, K_MATCH_OVERRIDE, true, cond.variantOverride, cond.reasons.match, metaFor(flag, cond.variantOverride));
    }
    const vi = variantIndex(flag, id);
    const variant = vi < 0 ? null : flag.variants!.keys[vi]!;
    return conditionResult(flag, cond, vi < 0 ? K_MATCH : K_MATCH_VARIANT + vi, true, variant, cond.reasons.match, metaFor(flag, variant ?? 'true'));
  }
  if (bestCond === null) return result(flag, false, null, best, flag.metadataNoPayload);
  if (skippedGroup && bestKind === K_NO_MATCH) {
    return conditionResult(flag, bestCond, K_NO_MATCH_GROUPS_SKIPPED, false, null, bestCond.reasons.noMatchGroupsSkipped, flag.metadataNoPayload);
  }
  return conditionResult(flag, bestCond, bestKind, false, null, best, flag.metadataNoPayload);
}
