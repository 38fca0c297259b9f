/**
 * The compiled form of a project (internal to src/evaluation): everything a request needs,
 * prepared once per definitions change by `compileProject` (compile.ts) and only read by
 * `evaluateFlags` (evaluate.ts). Nothing here is mutated after compilation except the per-flag
 * result memo ({@link CompiledFlag.results}).
 */
import type { CompiledPropertyFilter } from './properties/index.js';
import type { CompileProblem, FlagReason, FlagResult, FlagResultMetadata } from './types.js';
import type { CohortTable } from './cohorts.js';
import type { CompiledHoldout } from './holdout.js';
import type { HashPrefix } from './hash.js';
import type { VariantTable } from './variants.js';

/** A person or group property filter of a condition. */
export interface PropertyCheck {
  /** Reads group properties (a `group` filter) rather than person properties (research §3.1 "Routing"). */
  readonly group: boolean;
  /** Group type name for group filters; null when the index does not resolve (fails closed). */
  readonly groupTypeName: string | null;
  readonly filter: CompiledPropertyFilter;
}

/** A flag-dependency filter (research §3.5), resolved to the dependency's slot. */
export interface FlagCheck {
  /** Slot of the dependency in {@link CompiledProject.flags}; -1 when it does not exist. */
  readonly slot: number;
  /** `true`, `false` or a variant key; null never matches (number, array, null, wrong operator). */
  readonly expected: boolean | string | null;
}

/** A cohort filter of a condition (research §3.4). */
export interface CohortCheck {
  readonly cohortId: number;
  /** `not_in`: the membership is inverted. */
  readonly negate: boolean;
}

/** One condition set after compilation (research §1, §4 step 4). */
export interface CompiledCondition {
  readonly index: number;
  /** Group type index this set aggregates by, or null for person. */
  readonly aggregation: number | null;
  /** Group type name for `aggregation`; null when the index is not in the mapping. */
  readonly groupTypeName: string | null;
  readonly flagChecks: readonly FlagCheck[];
  readonly propertyChecks: readonly PropertyCheck[];
  readonly cohortChecks: readonly CohortCheck[];
  /** Rollout is 100 % (or more): no rollout hash. */
  readonly fullRollout: boolean;
  /** rollout_percentage / 100 in binary64 (research §2.2). */
  readonly threshold: number;
  /** A variant override that names a declared variant, else null. */
  readonly variantOverride: string | null;
  /** Frozen reason objects for this set, shared by every result (they never change). */
  readonly reasons: ConditionReasons;
  /**
   * Index of this set's filters among the project's distinct filter lists
   * ({@link CompiledProject.sharedFilters}): sets of different flags with the same property and
   * cohort filters (same JSON, same aggregation) share it, and one request tests them once. -1
   * when not shared: no property or cohort filter, or a flag-dependency filter (its value changes
   * during the request).
   */
  readonly sharedFilter: number;
  /**
   * The flag's shared results this set has given, by outcome (match-flag.ts `conditionResult`):
   * with the flag's result memo, the only part written after compilation.
   */
  readonly results: (FlagResult | undefined)[];
}

/** The reasons a condition set can record (research §4), prebuilt with its index. */
export interface ConditionReasons {
  readonly match: FlagReason;
  readonly outOfRollout: FlagReason;
  readonly noMatch: FlagReason;
  /** `no_condition_match` when some group set was skipped for lack of a group key. */
  readonly noMatchGroupsSkipped: FlagReason;
  readonly noGroup: FlagReason;
}

/** How early access is gated (research §4 step 2). */
export type EnrollmentGate =
  | { readonly kind: 'feature_enrollment'; readonly propertyKey: string }
  | { readonly kind: 'super_group'; readonly propertyKeys: readonly string[]; readonly condition: CompiledCondition };

/** A failed flag: every request answers it with a failed entry. */
export interface FlagFailure {
  readonly code: string;
  readonly description: string;
}

/** Runtime selector (research §1, spec/API.md §4.4 rule 3). */
export type FlagRuntime = 'client' | 'server' | 'all';

/** One flag after compilation. */
export interface CompiledFlag {
  /** Position in {@link CompiledProject.flags} (evaluation order). */
  readonly slot: number;
  readonly key: string;
  readonly id: number;
  /** `version`, null sent as 0 (research §1). */
  readonly version: number;
  /** `name`, sent as `metadata.description`. */
  readonly description: string | null;
  /** active and not deleted; other flags are omitted from responses and read as false by dependents. */
  readonly live: boolean;
  readonly runtime: FlagRuntime;
  /** evaluation_tags; null or empty = always evaluated. */
  readonly tags: readonly string[] | null;
  readonly surveyTargeting: boolean;
  readonly failure: FlagFailure | null;
  /** A dependency is missing or cyclic (research §3.5): answers false / missing_dependency. */
  readonly missingDependency: boolean;
  /** Slots of direct dependencies (existing flags only). */
  readonly dependencySlots: readonly number[];
  readonly continuity: boolean;
  readonly bucketByDevice: boolean;
  /**
   * `filters.early_exit`: a condition set whose properties match but whose rollout misses ends
   * evaluation there (`out_of_rollout_bound`); later sets are not tried (research §1, §4 step 4).
   */
  readonly earlyExit: boolean;
  /** Flag-level aggregation_group_type_index. */
  readonly aggregation: number | null;
  readonly groupTypeName: string | null;
  /** `key + "."`, the rollout and variant hash prefix, compiled (hash.ts). */
  readonly hashPrefix: HashPrefix;
  readonly conditions: readonly CompiledCondition[];
  readonly variants: VariantTable | null;
  /** Frozen metadata by payload key (variant key, "true", "holdout-N"), for keys with a payload. */
  readonly metadataByPayloadKey: ReadonlyMap<string, FlagResultMetadata>;
  /** Frozen metadata with `payload: null`. */
  readonly metadataNoPayload: FlagResultMetadata;
  readonly enrollment: EnrollmentGate | null;
  readonly holdout: CompiledHoldout | null;
  /**
   * Memo of this flag's non-failed results (match-flag.ts `result`): the only part of a compiled
   * project written after compilation. A result is a function of (enabled, variant, reason,
   * metadata), all compiled constants, so a flag has only a handful of distinct results; sharing
   * them frozen saves one object per flag per request (~3 KB of garbage per 50-flag request).
   */
  readonly results: FlagResult[];
}

/** A compiled project: flags in dependency order plus lookup tables. */
export interface CompiledProject {
  /** Every flag of the definitions (live or not), dependencies before dependents. */
  readonly flags: readonly CompiledFlag[];
  readonly byKey: ReadonlyMap<string, CompiledFlag>;
  readonly cohorts: CohortTable;
  /** Definition problems, one per failed flag (and per bad cohort used by a flag). */
  readonly problems: readonly CompileProblem[];
  readonly timezone: string;
  /**
   * Whether a flag or cohort of the project filters with `regex` / `not_regex`: the one operator
   * whose cost is not bounded by a few comparisons per flag (src/evaluation/budget.ts). A node
   * runs a project's evaluation under its time budget only when this is true.
   */
  readonly usesRegex: boolean;
  /** How many distinct shared filter lists the project's condition sets have ({@link CompiledCondition.sharedFilter}). */
  readonly sharedFilters: number;
  /** Some flag depends on another (a flag filter naming an existing flag): requests keep each flag's value by slot. */
  readonly readsFlagValues: boolean;
}
