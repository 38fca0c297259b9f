/**
 * Reason codes, their ranking scores and description strings: the one place they are defined
 * (STYLE.md rule 5). Source: Rust `flags/flag_match_reason.rs` (scores) and `api/types.rs`
 * (`get_reason_description`); research/posthog-flag-evaluation.md §4.
 *
 * While a flag's condition sets are tried, a newly recorded reason replaces the best one so far
 * when its score is **greater than or equal** (so ties go to the later set).
 */

/** Match reasons: wire code → ranking score and fixed description. */
export const REASONS = Object.freeze({
  super_condition_value: Object.freeze({ score: 6, description: 'Super condition value' }),
  holdout_condition_value: Object.freeze({ score: 5, description: 'Holdout condition value' }),
  /** The description carries the 1-based set number: see {@link conditionMatchDescription}. */
  condition_match: Object.freeze({ score: 4, description: 'Matched condition set' }),
  out_of_rollout_bound: Object.freeze({ score: 3, description: 'Out of rollout bound' }),
  no_condition_match: Object.freeze({ score: 2, description: 'No matching condition set' }),
  no_group_type: Object.freeze({ score: 1, description: 'No group type' }),
  flag_disabled: Object.freeze({ score: 0, description: 'Feature flag is disabled' }),
  missing_dependency: Object.freeze({ score: -1, description: 'Flag cannot be evaluated due to missing dependency' }),
} as const);

/** A match reason code. */
export type ReasonCode = keyof typeof REASONS;

/**
 * `no_condition_match` description when some group condition set was skipped for lack of a
 * group key (Rust `NoConditionMatchGroupsNotEvaluated`; the code stays `no_condition_match`).
 */
export const NO_CONDITION_MATCH_GROUPS_NOT_EVALUATED =
  'No matching condition set (group conditions were not evaluated because no group type was provided)';

/** `Matched condition set {index+1}` (research §4). `index` is 0-based. */
export function conditionMatchDescription(index: number): string {
  return `Matched condition set ${index + 1}`;
}

/**
 * Error codes of failed entries (research §4 "Errors"), each with its description. A failed entry
 * is `enabled:false, variant:null, failed:true` with `condition_index: null`.
 */
export const ERROR_CODES = Object.freeze({
  flag_data_parsing_error: 'Failed to parse flag data',
  cohort_filters_parsing_error: 'Failed to parse cohort filters',
  hash_key_override_error: 'Failed to fetch hash key overrides',
  /** An unexpected exception while evaluating one flag (Rust `FlagError::internal` prefix). */
  internal_error: 'Internal error',
  /**
   * The request's evaluation budget ran out before this flag was answered (budget.ts). Rust names
   * timeouts `timeout:<kind>` (`FlagError::TimeoutError`'s evaluation error code).
   */
  'timeout:evaluation_budget': 'Timeout: the request ran out of evaluation time before this flag was evaluated',
} as const);

/** A failed-entry error code. */
export type ErrorCode = keyof typeof ERROR_CODES;
