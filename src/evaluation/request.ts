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

function first(body: Record<string, unknown>, ...names: string[]): unknown {
  for (const n of names) if (body[n] !== undefined && body[n] !== null) return body[n];
  return undefined;
}

function objectField<T>(body: Record<string, unknown>, names: string[]): T | undefined {
  const v = first(body, ...names);
  if (v === undefined) return undefined;
  if (!isObj(v)) throw new RequestBodyError('request_parsing_error', `${names[0]} must be an object`);
  return v as T;
}

function stringList(body: Record<string, unknown>, names: string[]): string[] | null {
  const v = first(body, ...names);
  if (v === undefined) return null;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new RequestBodyError('request_parsing_error', `${names[0]} must be a list of strings`);
  }
  return v as string[];
}

/** Reads `body` (already JSON-decoded). Throws {@link RequestBodyError}. */
export function requestFromBody(body: unknown, detected: EvaluationRequest['runtime'] = null): EvaluationRequest {
  if (!isObj(body)) throw new RequestBodyError('request_parsing_error', 'request body must be a JSON object');
  const rawId = first(body, 'distinct_id', '$distinct_id');
  let distinctId: string;
  if (typeof rawId === 'string') distinctId = rawId;
  else if (typeof rawId === 'number' && Number.isFinite(rawId)) distinctId = String(rawId);
  else throw new RequestBodyError('missing_distinct_id', 'The distinct_id field is missing from the request');
  const anon = first(body, '$anon_distinct_id', 'anon_distinct_id');
  const device = first(body, '$device_id', 'device_id');
  const explicit = body.evaluation_runtime;
  const runtime = explicit === 'client' || explicit === 'server' ? explicit : detected;
  return {
    distinct_id: distinctId,
    groups: objectField(body, ['groups']),
    person_properties: objectField(body, ['person_properties', '$properties']),
    group_properties: objectField(body, ['group_properties', '$group_properties']),
    anon_distinct_id: typeof anon === 'string' ? anon : null,
    device_id: typeof device === 'string' ? device : null,
    flag_keys_to_evaluate: stringList(body, ['flag_keys_to_evaluate', 'flag_keys']),
    evaluation_environments: stringList(body, ['evaluation_environments', 'evaluation_contexts']),
    runtime,
    only_evaluate_survey_feature_flags: body.only_evaluate_survey_feature_flags === true,
  };
}
