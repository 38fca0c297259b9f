/**
 * The parse stage's field reading for /flags (research/posthog-flag-evaluation.md §5.1 "Body
 * fields" and "Query parameters"): the project token, the {@link EvaluationRequest} (built by the
 * core's `requestFromBody`, which accepts every alias PostHog accepts and turns a numeric
 * distinct_id into its string; truncation to 200 scalars is the core's), and the request-level
 * switches the HTTP layer itself acts on (`geoip_disable`, `disable_flags`, `evaluation_runtime`).
 */
import { requestFromBody, RequestBodyError, type EvaluationRequest } from '../../evaluation/index.js';
import { errors, type ApiError } from '../../errors.js';
import type { ResponseShape } from '../pool/job.js';
import type { Runtime } from './runtime.js';

export { RequestBodyError };

/** True for a plain JSON object. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The project token from `token`, `$token` or `api_key` (first non-empty string), else null. */
export function tokenOf(body: Record<string, unknown>): string | null {
  for (const k of TOKEN_FIELDS) {
    const v = body[k];
    if (typeof v === 'string' && v !== '') return v;
  }
  return null;
}
const TOKEN_FIELDS = ['token', '$token', 'api_key'] as const;

/** Request-level switches read from the body. */
export interface FlagsSwitches {
  geoipDisable: boolean;
  disableFlags: boolean;
  /** Body `evaluation_runtime` as sent (only `client`/`server` are honoured by runtime detection). */
  explicitRuntime: unknown;
}

/** Reads the switches of `body`. */
export function switchesOf(body: Record<string, unknown>): FlagsSwitches {
  return {
    geoipDisable: body.geoip_disable === true || body.geoip_disable === 'true',
    disableFlags: body.disable_flags === true || body.disable_flags === 'true',
    explicitRuntime: body.evaluation_runtime,
  };
}

/**
 * The EvaluationRequest of `body` with the detected runtime and the query's survey switch.
 * @throws ApiError 400 `missing_distinct_id` / `request_parsing_error`.
 */
export function evaluationRequestOf(body: Record<string, unknown>, runtime: Runtime, onlySurveyFlags: boolean): EvaluationRequest {
  let req: EvaluationRequest;
  try {
    req = requestFromBody(body, runtime);
  } catch (e) {
    if (e instanceof RequestBodyError) throw toApiError(e);
    throw e;
  }
  if (onlySurveyFlags) req.only_evaluate_survey_feature_flags = true;
  return req;
}

function toApiError(e: RequestBodyError): ApiError {
  return errors.badRequest(e.code, e.message, e.code === 'missing_distinct_id' ? 'distinct_id' : null);
}

/** Query parameters of /flags and /decide that matter here. */
export interface FlagsQuery {
  /** `v` (alias `version`) as an integer; null when absent or not a number. */
  version: number | null;
  config: boolean;
  compression: string;
  onlySurveyFlags: boolean;
  /** `only_use_override_person_properties`: evaluate with request properties only. */
  onlyOverrideProperties: boolean;
}

/**
 * Parsed queries by raw text. Clients send the same few query strings (`v=2`, `v=2&config=true`,
 * …) on every request, so the parsed object is shared (frozen) instead of split and rebuilt per
 * request; the cap bounds what odd clients can add.
 */
const queryCache = new Map<string, Readonly<FlagsQuery>>();
const QUERY_CACHE_MAX = 256;

/** {@link parseFlagsQuery}, shared per raw query string (the result is frozen: do not mutate). */
export function flagsQueryOf(raw: string): Readonly<FlagsQuery> {
  let q = queryCache.get(raw);
  if (q === undefined) {
    q = Object.freeze(parseFlagsQuery(raw));
    if (queryCache.size >= QUERY_CACHE_MAX) queryCache.clear();
    queryCache.set(raw, q);
  }
  return q;
}

/**
 * Parses the raw query string (without `?`). A hand loop over `&`-separated pairs: only four keys
 * matter, and URLSearchParams allocated a map per request on the hot path.
 */
export function parseFlagsQuery(raw: string): FlagsQuery {
  let v: string | null = null;
  let version: string | null = null;
  let config: string | null = null;
  let compression = '';
  let survey: string | null = null;
  let overrideOnly: string | null = null;
  if (raw !== '') {
    for (const pair of raw.split('&')) {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      const value = eq < 0 ? '' : queryValue(pair.slice(eq + 1));
      switch (name) {
        case 'v': v ??= value; break;
        case 'version': version ??= value; break;
        case 'config': config ??= value; break;
        case 'compression': compression ||= value; break;
        case 'only_evaluate_survey_feature_flags': survey ??= value; break;
        case 'only_use_override_person_properties': overrideOnly ??= value; break;
      }
    }
  }
  const raw2 = v ?? version;
  const n = raw2 === null ? NaN : Number.parseInt(raw2, 10);
  return { version: Number.isFinite(n) ? n : null, config: truthy(config), compression, onlySurveyFlags: truthy(survey), onlyOverrideProperties: truthy(overrideOnly) };
}

function queryValue(s: string): string {
  if (!s.includes('%') && !s.includes('+')) return s;
  try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch { return s; }
}

function truthy(v: string | null): boolean {
  return v !== null && (v === 'true' || v === '1' || v === 'True');
}

/**
 * Response shape (research §5.3): /flags v≥2 → v2, else v1; /decide v≥4 → v2, 3 → flags v1,
 * 2 → decide v2, 1 or absent → decide v1.
 */
export function shapeOf(endpoint: 'flags' | 'decide', version: number | null): ResponseShape {
  if (endpoint === 'flags') return version !== null && version >= 2 ? 'flags-v2' : 'flags-v1';
  if (version === null || version <= 1) return 'decide-v1';
  if (version === 2) return 'decide-v2';
  if (version === 3) return 'flags-v1';
  return 'flags-v2';
}
