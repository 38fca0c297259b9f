/**
 * The evaluation core (DESIGN.md "Evaluation core"): pure functions that compile a project's flag
 * definitions and answer /flags requests exactly as PostHog's Rust /flags service does
 * (research/posthog-flag-evaluation.md; where PostHog's implementations differ, Rust wins and the
 * owning module says so).
 *
 * Usage: `const project = compileProject(defs)` once per definitions change, then per request
 * `evaluateFlags(project, req, stored, nowMs)` and one of `toFlagsV2` / `toFlagsV1` / `toDecide`.
 * No IO, clock, or logger anywhere below this folder.
 */
export { compileProject, type CompileOptions } from './compile.js';
export type { CompiledProject } from './compiled.js';
export { evaluateFlags } from './evaluate.js';
export { flagsNeedingHashKeyOverrides } from './continuity.js';
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
