/**
 * Public types of the evaluation core: the definitions it compiles (the local-evaluation feed
 * shape, research/posthog-flag-evaluation.md §1 and §6.1), the request and stored context it
 * evaluates, and the per-flag result every response shape is projected from (§4, §5).
 *
 * Wire names are PostHog's (snake_case inside flags and entries) so that a feed or a /flags
 * body can be passed through without renaming.
 */
import type { PropertyFilter } from './properties/index.js';

export type { PropertyFilter };

/** One condition set of `filters.groups` (research §1). */
export interface FlagConditionDefinition {
  properties?: PropertyFilterDefinition[] | null;
  /** 0–100, decimals allowed; null or absent means 100. */
  rollout_percentage?: number | null;
  /** Variant override; applies only when it is one of the declared variant keys. */
  variant?: string | null;
  /** Absent: use the flag-level value; explicit null: person; an int: that group type. */
  aggregation_group_type_index?: number | null;
  [extra: string]: unknown;
}

/**
 * A property filter as stored: the PROPS shape plus the fields only the core reads
 * (`dependency_chain` on flag filters in the local feed, research §3.5).
 */
export interface PropertyFilterDefinition extends PropertyFilter {
  dependency_chain?: string[] | null;
  [extra: string]: unknown;
}

/** One entry of `filters.multivariate.variants`; order matters (research §2.3). */
export interface VariantDefinition {
  key: string;
  name?: string | null;
  rollout_percentage: number;
  [extra: string]: unknown;
}

/** `filters` of a flag (research §1). Unknown keys are ignored. */
export interface FlagFilters {
  groups?: FlagConditionDefinition[] | null;
  multivariate?: { variants?: VariantDefinition[] | null } | null;
  /** Variant key (or `"true"`) → stored payload, normally a JSON-encoded string. */
  payloads?: Record<string, unknown> | null;
  aggregation_group_type_index?: number | null;
  super_groups?: FlagConditionDefinition[] | null;
  feature_enrollment?: boolean | null;
  holdout?: { id: number; exclusion_percentage: number } | null;
  holdout_groups?: FlagConditionDefinition[] | null;
  early_exit?: boolean | null;
  /** Config-format discriminator: absent or 1 is this format; anything else fails (research §1). */
  version?: number | null;
  [extra: string]: unknown;
}

/** A flag as served by the definitions feed or the service cache (research §1). */
export interface FlagDefinition {
  id: number;
  team_id?: number;
  key: string;
  name?: string | null;
  filters: FlagFilters;
  active: boolean;
  deleted?: boolean;
  ensure_experience_continuity?: boolean | null;
  version?: number | null;
  evaluation_runtime?: string | null;
  evaluation_tags?: string[] | null;
  bucketing_identifier?: string | null;
  has_encrypted_payloads?: boolean | null;
  [extra: string]: unknown;
}

/** A cohort definition group: `{type: "AND"|"OR", values: [...]}`; legacy `"property"` means AND (research §3.4). */
export interface CohortGroupDefinition {
  type: string;
  values: Array<CohortGroupDefinition | PropertyFilterDefinition>;
}

/**
 * A cohort as it appears in `cohorts[id]`: either the group itself, or `{properties: group}`
 * (Django's `cohort.filters` shape). `is_static: true` means membership comes only from
 * {@link StoredContext.static_cohort_ids}.
 */
export type CohortDefinition = (CohortGroupDefinition | { properties: CohortGroupDefinition }) & { is_static?: boolean };

/** The local-evaluation feed shape (research §6.1). */
export interface ProjectDefinitions {
  flags: FlagDefinition[];
  /** Group type index (as a string) → group type name, e.g. `{"0": "organization"}`. */
  group_type_mapping: Record<string, string>;
  /** Cohort id (as a string) → definition. */
  cohorts: Record<string, CohortDefinition>;
  /**
   * The team's property matching: 2 = explicit boolean equality for `exact`/`is_not`; absent,
   * 1 or anything else = legacy (PostHog's local-evaluation feed field of the same name).
   */
  property_matching_version?: number;
}

/** One /flags request after HTTP decoding (research §5.1). */
export interface EvaluationRequest {
  /** Raw distinct id; the core truncates it to 200 Unicode scalar values (research §2.4). */
  distinct_id: string;
  /** Group type name → group key. */
  groups?: Record<string, unknown>;
  person_properties?: Record<string, unknown>;
  group_properties?: Record<string, Record<string, unknown>>;
  anon_distinct_id?: string | null;
  device_id?: string | null;
  flag_keys_to_evaluate?: string[] | null;
  evaluation_environments?: string[] | null;
  /**
   * Detected by the HTTP layer; null or absent = undetermined (spec/API.md §4.4 rule 3: only flags
   * without a runtime or with "all"). `'all'` disables the runtime filter, for internal callers
   * (evaluation reasons, blast radius) that want every flag.
   */
  runtime?: 'client' | 'server' | 'all' | null;
  only_evaluate_survey_feature_flags?: boolean;
}

/** What the node's store holds for this request. Every field is optional. */
export interface StoredContext {
  /** DB person properties; request properties override them. */
  person_properties?: Record<string, unknown> | null;
  /** DB group properties by group type NAME. */
  group_properties?: Record<string, Record<string, unknown>> | null;
  /** Flag key → hash key (experience continuity, research §2.6). */
  hash_key_overrides?: Record<string, string> | null;
  /**
   * True when the hash-key-override lookup failed: every continuity flag then becomes a failed
   * entry with code `hash_key_override_error` (research §2.6 step 3).
   */
  hash_key_overrides_failed?: boolean;
  /** Static cohorts the person is in. */
  static_cohort_ids?: ReadonlySet<number> | null;
}

/** A flag's reason (research §4 "Reason codes"). */
export interface FlagReason {
  code: string;
  condition_index: number | null;
  description: string;
}

/** Metadata of one result entry (research §5.2). `payload` is the stored raw JSON string. */
export interface FlagResultMetadata {
  id: number;
  version: number;
  payload: string | null;
  description: string | null;
}

/**
 * One flag's answer, the /flags v2 entry (research §5.2). `failed` appears only on error entries.
 * Non-failed results, and their `reason` and `metadata`, are frozen objects shared by every
 * request (precomputed at compile time or memoized per compiled flag): copy before changing anything.
 */
export interface FlagResult {
  key: string;
  enabled: boolean;
  variant: string | null;
  failed?: true;
  reason: FlagReason;
  metadata: FlagResultMetadata;
}

/** The answer to one request, from which every response shape is built. */
export interface EvaluationResult {
  flags: Record<string, FlagResult>;
  errorsWhileComputingFlags: boolean;
}

/** One definition problem found while compiling: which flag, which field, what is wrong. */
export interface CompileProblem {
  flagKey: string;
  field: string;
  message: string;
}

/** Thrown by `compileProject` only when the definitions object itself has the wrong shape. */
export class DefinitionError extends Error {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'DefinitionError';
  }
}
