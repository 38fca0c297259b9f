/**
 * OpenFeature Remote Evaluation Protocol (OFREP v1) over PostHog's evaluation, pure: an OFREP
 * evaluation context becomes a `/flags` request body, and a `/flags` v2 flag result becomes an
 * OFREP evaluation (shapes from the OFREP OpenAPI `service/openapi.yaml` as
 * `@openfeature/ofrep-core` types it).
 *
 * Context → request: `targetingKey` is the `distinct_id` (required: PostHog buckets by it);
 * `groups` (object, group type → key) and `groupProperties` / `group_properties` (group type →
 * properties) are PostHog's groups; every other attribute is a person property.
 *
 * Result → evaluation: `value` is what PostHog's SDKs return from `getFeatureFlag` — the variant
 * key of a multivariate flag, else `true`/`false` — and `variant` the same as text. So
 * OpenFeature `getBooleanValue` reads boolean flags and `getStringValue` multivariate ones; a
 * multivariate flag that is off for the user answers `false`, which the SDK reports as a type
 * mismatch and resolves to the caller's default (OpenFeature's meaning of "off"). The payload
 * is not the value (a flag has one value type in OpenFeature); it travels as the JSON text
 * `metadata.payload`, with `metadata.reason` (PostHog's reason code), `flagId`, `version`.
 * Reasons: condition_match → TARGETING_MATCH (SPLIT when a hashed variant decided),
 * out_of_rollout_bound and holdout → SPLIT, no_condition_match / no_group_type → DEFAULT,
 * flag_disabled → DISABLED, anything else → UNKNOWN.
 */

/** OFREP error codes used here. */
export type OfrepErrorCode = 'PARSE_ERROR' | 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT' | 'FLAG_NOT_FOUND' | 'GENERAL';

/** A successful OFREP evaluation. */
export interface OfrepSuccess {
  key: string;
  value: boolean | string;
  variant: string;
  reason: 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'DISABLED' | 'UNKNOWN';
  metadata: Record<string, string | number | boolean>;
}

/** A failed OFREP evaluation (single flag: HTTP 400/404; inside a bulk answer: one entry). */
export interface OfrepFailure { key: string; errorCode: OfrepErrorCode; errorDetails: string }

/** A context that cannot be evaluated. */
export class OfrepContextError extends Error {
  constructor(readonly code: 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT', message: string) {
    super(message);
    this.name = 'OfrepContextError';
  }
}

/** The part of a `/flags` v2 flag entry this mapping reads. */
export interface FlagsV2Entry {
  enabled: boolean;
  variant?: string | null;
  failed?: boolean;
  reason?: { code?: string; condition_index?: number | null; description?: string | null };
  metadata?: { id?: number; version?: number; payload?: string | null };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The `/flags` body for an OFREP request body (`{context}`), without the token.
 * @throws OfrepContextError INVALID_CONTEXT (context not an object, malformed groups) or
 *   TARGETING_KEY_MISSING (no non-empty string `targetingKey`).
 */
export function flagsBodyOf(requestBody: unknown): Obj {
  const context = isObj(requestBody) ? requestBody.context ?? {} : undefined;
  if (!isObj(context)) throw new OfrepContextError('INVALID_CONTEXT', 'context must be an object');
  const { targetingKey, groups, groupProperties, group_properties: groupPropertiesSnake, ...person } = context;
  if (typeof targetingKey !== 'string' || targetingKey === '') {
    throw new OfrepContextError('TARGETING_KEY_MISSING', 'context.targetingKey (the PostHog distinct_id) is required');
  }
  const body: Obj = { distinct_id: targetingKey, person_properties: person };
  if (groups !== undefined) {
    if (!isObj(groups)) throw new OfrepContextError('INVALID_CONTEXT', 'context.groups must map group types to keys');
    body.groups = groups;
  }
  const gp = groupProperties ?? groupPropertiesSnake;
  if (gp !== undefined) {
    if (!isObj(gp)) throw new OfrepContextError('INVALID_CONTEXT', 'context.groupProperties must map group types to properties');
    body.group_properties = gp;
  }
  return body;
}

function reasonOf(e: FlagsV2Entry): OfrepSuccess['reason'] {
  switch (e.reason?.code) {
    case 'condition_match': case 'super_condition_value': return typeof e.variant === 'string' ? 'SPLIT' : 'TARGETING_MATCH';
    case 'out_of_rollout_bound': case 'holdout_condition_value': return 'SPLIT';
    case 'no_condition_match': case 'no_group_type': return 'DEFAULT';
    case 'flag_disabled': return 'DISABLED';
    default: return 'UNKNOWN';
  }
}

/** The OFREP evaluation of flag `key` from its `/flags` v2 entry (undefined: not served → FLAG_NOT_FOUND). */
export function ofrepEvaluation(key: string, entry: FlagsV2Entry | undefined): OfrepSuccess | OfrepFailure {
  if (entry === undefined) return { key, errorCode: 'FLAG_NOT_FOUND', errorDetails: `flag "${key}" is not active in this project` };
  if (entry.failed === true) return { key, errorCode: 'GENERAL', errorDetails: entry.reason?.description ?? 'the flag could not be evaluated' };
  const value = entry.enabled ? (typeof entry.variant === 'string' ? entry.variant : true) : false;
  const metadata: OfrepSuccess['metadata'] = {};
  if (entry.reason?.code) metadata.reason = entry.reason.code;
  if (typeof entry.reason?.condition_index === 'number') metadata.conditionIndex = entry.reason.condition_index;
  if (typeof entry.metadata?.id === 'number') metadata.flagId = entry.metadata.id;
  if (typeof entry.metadata?.version === 'number') metadata.version = entry.metadata.version;
  if (typeof entry.metadata?.payload === 'string') metadata.payload = entry.metadata.payload;
  return { key, value, variant: String(value), reason: reasonOf(entry), metadata };
}

/** Whether an evaluation failed (for the single-flag HTTP status). */
export function isOfrepFailure(e: OfrepSuccess | OfrepFailure): e is OfrepFailure {
  return 'errorCode' in e;
}
