/**
 * The evaluation core (DESIGN.md "Evaluation core"): pure functions that compile a project's flag
 * definitions and answer /flags requests exactly as PostHog's Rust /flags service does
 * (research/posthog-flag-evaluation.md; where PostHog's implementations differ, Rust wins and the
 * owning module says so).
 *
 * Usage: `const project = compileProject(defs)` once per definitions change, then per request
 * `evaluateFlags(project, req, stored, nowMs)` and one of `toFlagsV2` / `toFlagsV1` / `toDecide`.
 * No IO, clock, or logger anywhere below this folder.
 *
 * Choices where PostHog's implementations differ (Rust `/flags` followed unless noted; details in
 * the named module):
 * - condition sets in stored order; `early_exit` ignored (match-flag.ts, compile.ts);
 * - empty identifier hashes to 0.0 for rollout and variant, not for holdouts; distinct_id cut to
 *   200 Unicode scalar values (hash.ts, context.ts);
 * - missing or cyclic dependency → false / `missing_dependency`, not an error (dependencies.ts);
 * - holdouts, `feature_enrollment` and legacy `super_groups` implemented (SDKs ignore them);
 * - a group flag called without its group answers `no_group_type` with the index of its last set;
 *   a flag with no sets answers `no_group_type` / null (match-flag.ts);
 * - device-id flags without `$device_id`: a set whose answer depends on the hash is skipped as
 *   `out_of_rollout_bound`; a hash-independent 100 % set is still evaluated (newest Rust docs);
 * - stored hash-key overrides apply to any person flag they name; `$anon_distinct_id` only to
 *   continuity flags (context.ts);
 * - a cohort absent from the definitions, or `is_static`, is a static cohort (cohorts.ts);
 * - a non-string stored payload is sent as its JSON text (compile.ts).
 */
export { compileProject, type CompileOptions } from './compile.js';
export type { CompiledProject } from './compiled.js';
export { evaluateFlags, orderedResultsOf } from './evaluate.js';
export type { EvaluationBudget } from './budget.js';
export { flagsNeedingHashKeyOverrides } from './continuity.js';
export { requestCoversGroup, requestCoversPerson, storedPropertyUse, type StoredPropertyUse } from './stored-use.js';
export { hash01, truncateScalars } from './hash.js';
export { serializeFlagsV1, serializeFlagsV2 } from './serialize.js';
export { REASONS, ERROR_CODES, type ReasonCode, type ErrorCode } from './reasons.js';
export { requestFromBody, RequestBodyError } from './request.js';
export {
  toDecide, toFlagsV1, toFlagsV2, flagValue,
  type DecideLegacyResponse, type FlagsV1Response, type FlagsV2Response, type ResponseExtra,
} from './responses.js';
export {
  DefinitionError,
  type CohortDefinition, type CompileProblem, type EvaluationRequest, type EvaluationResult, type FlagDefinition,
  type FlagFilters, type FlagReason, type FlagResult, type FlagResultMetadata, type ProjectDefinitions,
  type StoredContext,
} from './types.js';
