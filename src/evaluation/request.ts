/**
 * A decoded /flags JSON body → {@link EvaluationRequest} (research/posthog-flag-evaluation.md
 * §5.1 "Body fields"): accepts every alias PostHog accepts (`distinct_id`/`$distinct_id`,
 * `person_properties`/`$properties`, `group_properties`/`$group_properties`,
 * `$anon_distinct_id`/`anon_distinct_id`, `$device_id`/`device_id`, `flag_keys_to_evaluate`/
 * `flag_keys`, `evaluation_environments`/`evaluation_contexts`). A numeric distinct_id becomes its
 * string; `""` is allowed. Truncation to 200 scalars happens in the core.
 *
 * Runtime (research §4 "Runtime filter"): an explicit body `evaluation_runtime` of "client" or
 * "server" wins; otherwise the runtime the HTTP layer detected from headers (`detected`) is used.
 */
import type { EvaluationRequest } from './types.js';

/** Thrown for a body PostHog answers with 400; `code` is PostHog's (`missing_distinct_id`, `request_parsing_error`). */
export class RequestBodyError extends Error {
  constructor(readonly code: 'missing_distinct_id' | 'request_parsing_error', message: string) {
    super(message);
    this.name = 'RequestBodyError';
  }
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// Alias lists as module constants: rest parameters and array literals at the call sites
// allocated ~8 small arrays per /flags request (heap sampling of bench/flags.ts).
const DISTINCT_ID = ['distinct_id', '$distinct_id'] as const;
const ANON_ID = ['$anon_distinct_id', 'anon_distinct_id'] as const;
const DEVICE_ID = ['$device_id', 'device_id'] as const;
const GROUPS = ['groups'] as const;
const PERSON_PROPERTIES = ['person_properties', '$properties'] as const;
const GROUP_PROPERTIES = ['group_properties', '$group_properties'] as const;
const FLAG_KEYS = ['flag_keys_to_evaluate', 'flag_keys'] as const;
const ENVIRONMENTS = ['evaluation_environments', 'evaluation_contexts'] as const;

function first(body: Record<string, unknown>, names: readonly string[]): unknown {
  for (let i = 0; i < names.length; i++) {
    const v = body[names[i]!];
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

function objectField<T>(body: Record<string, unknown>, names: readonly string[]): T | undefined {
  const v = first(body, names);
  if (v === undefined) return undefined;
  if (!isObj(v)) throw new RequestBodyError('request_parsing_error', `${names[0]} must be an object`);
  return v as T;
}

function stringList(body: Record<string, unknown>, names: readonly string[]): string[] | null {
  const v = first(body, names);
  if (v === undefined) return null;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new RequestBodyError('request_parsing_error', `${names[0]} must be a list of strings`);
  }
  return v as string[];
}

/** Reads `body` (already JSON-decoded). Throws {@link RequestBodyError}. */
export function requestFromBody(body: unknown, detected: EvaluationRequest['runtime'] = null): EvaluationRequest {
  if (!isObj(body)) throw new RequestBodyError('request_parsing_error', 'request body must be a JSON object');
  const rawId = first(body, DISTINCT_ID);
  let distinctId: string;
  if (typeof rawId === 'string') distinctId = rawId;
  else if (typeof rawId === 'number' && Number.isFinite(rawId)) distinctId = String(rawId);
  else throw new RequestBodyError('missing_distinct_id', 'The distinct_id field is missing from the request');
  const anon = first(body, ANON_ID);
  const device = first(body, DEVICE_ID);
  const explicit = body.evaluation_runtime;
  const runtime = explicit === 'client' || explicit === 'server' ? explicit : detected;
  return {
    distinct_id: distinctId,
    groups: objectField(body, GROUPS),
    person_properties: objectField(body, PERSON_PROPERTIES),
    group_properties: objectField(body, GROUP_PROPERTIES),
    anon_distinct_id: typeof anon === 'string' ? anon : null,
    device_id: typeof device === 'string' ? device : null,
    flag_keys_to_evaluate: stringList(body, FLAG_KEYS),
    evaluation_environments: stringList(body, ENVIRONMENTS),
    runtime,
    only_evaluate_survey_feature_flags: body.only_evaluate_survey_feature_flags === true,
  };
}
