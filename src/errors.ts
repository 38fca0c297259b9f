/**
 * The one errors module shared by the control plane and the evaluation nodes.
 *
 * Every client-facing error is an {@link ApiError} that serialises to PostHog's
 * exceptions-hog body `{type, code, detail, attr}` (research/posthog-management-api.md §5.3,
 * §5.4). Build errors only through the factories in {@link errors} so that each stable
 * `code` is defined once with its status and `type`. Never reuse a retired code.
 */

/** PostHog's error `type` values (research §5.4). */
export type ErrorType =
  | 'validation_error'
  | 'invalid_request'
  | 'authentication_error'
  | 'server_error'
  | 'throttled_error'
  | 'quota_limited';

/** The wire body of every error response. */
export interface ErrorBody {
  type: ErrorType;
  code: string;
  detail: string;
  attr: string | null;
}

/**
 * A client-facing error: HTTP status plus PostHog's body. `empty` marks the few answers
 * PostHog sends without a body (DELETE on a flag or experiment → 405, research §1.5).
 *
 * It carries no stack trace: it is an answer, not a fault (a fault that becomes a 500 keeps its
 * own error and stack in the log). Capturing one cost ~5.7 µs per error, paid by every refused
 * request of a flood of bad keys or throttled clients.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly attr: string | null;
  readonly empty: boolean;
  /** Extra response headers (for example `WWW-Authenticate` on 401, `Allow` on 405). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, type: ErrorType, code: string, detail: string, attr: string | null = null,
    options: { empty?: boolean; headers?: Record<string, string> } = {}) {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(detail);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.name = 'ApiError';
    this.status = status;
    this.type = type;
    this.code = code;
    this.attr = attr;
    this.empty = options.empty ?? false;
    this.headers = Object.freeze({ ...(options.headers ?? {}) });
  }

  /** PostHog's `{type, code, detail, attr}` body. */
  toBody(): ErrorBody {
    return { type: this.type, code: this.code, detail: this.message, attr: this.attr };
  }
}

/**
 * Factories for every error the servers send, grouped by status (research §5.4).
 * `attr` names the offending field (nested paths joined with `__`), or null.
 */
export const errors = {
  /** 400 validation_error; `code` is the field code (`required`, `unique`, `invalid_input`, …). */
  validation(detail: string, attr: string | null = null, code = 'invalid_input'): ApiError {
    return new ApiError(400, 'validation_error', code, detail, attr);
  },
  /** 400 `required` on a missing field. */
  required(attr: string): ApiError {
    return new ApiError(400, 'validation_error', 'required', 'This field is required.', attr);
  },
  /** 400 invalid_request/parse_error: a body that is not valid JSON. */
  parse(reason: string): ApiError {
    return new ApiError(400, 'invalid_request', 'parse_error', `JSON parse error - ${reason}`);
  },
  /** 400 invalid_request with a custom code (used by /flags: missing_distinct_id, request_decoding_error…). */
  badRequest(code: string, detail: string, attr: string | null = null): ApiError {
    return new ApiError(400, 'invalid_request', code, detail, attr);
  },
  /** 401: no credentials at all. */
  notAuthenticated(): ApiError {
    return new ApiError(401, 'authentication_error', 'not_authenticated',
      'Authentication credentials were not provided.', null, { headers: { 'www-authenticate': 'Bearer realm="api"' } });
  },
  /** 401: credentials given but unknown or invalid. */
  authenticationFailed(detail = 'Personal API key found in request Authorization header is invalid.'): ApiError {
    return new ApiError(401, 'authentication_error', 'authentication_failed', detail, null,
      { headers: { 'www-authenticate': 'Bearer realm="api"' } });
  },
  /** 401 for the public endpoints' project API key (research/posthog-flag-evaluation.md §4). */
  invalidToken(code: 'missing_token' | 'invalid_token', detail: string): ApiError {
    return new ApiError(401, 'authentication_error', code, detail);
  },
  /** 403 permission_denied (missing scope, project outside the key's scoped projects…). */
  permissionDenied(detail = 'You do not have permission to perform this action.'): ApiError {
    return new ApiError(403, 'authentication_error', 'permission_denied', detail);
  },
  /** 403 for a key that lacks `scope` (research §5.2 wording). */
  missingScope(scope: string): ApiError {
    return new ApiError(403, 'authentication_error', 'permission_denied', `API key missing required scope '${scope}'`);
  },
  /** 404 not_found. */
  notFound(detail = 'Not found.'): ApiError {
    return new ApiError(404, 'invalid_request', 'not_found', detail);
  },
  /** 405 with PostHog's body. */
  methodNotAllowed(method: string, allow?: string[]): ApiError {
    return new ApiError(405, 'invalid_request', 'method_not_allowed', `Method "${method}" not allowed.`, null,
      allow ? { headers: { allow: allow.join(', ') } } : {});
  },
  /**
   * 405 with no body: hard DELETE of a flag or experiment (spec §7); `Allow` lists what the
   * resource does take (RFC 9110 requires it on every 405).
   */
  deleteForbidden(allow: readonly string[] = ['GET', 'PATCH', 'PUT']): ApiError {
    return new ApiError(405, 'invalid_request', 'method_not_allowed', 'Method "DELETE" not allowed.', null, { empty: true, headers: { allow: allow.join(', ') } });
  },
  /** 409 conflict on a concurrent flag edit (research §1.4; PostHog sends type server_error). */
  conflict(detail: string): ApiError {
    return new ApiError(409, 'server_error', 'conflict', detail);
  },
  /** 413: body over the configured limit. */
  payloadTooLarge(limitBytes: number): ApiError {
    return new ApiError(413, 'invalid_request', 'payload_too_large', `Request body is larger than ${limitBytes} bytes.`);
  },
  /** 415: the body is not JSON. */
  unsupportedMediaType(contentType: string): ApiError {
    return new ApiError(415, 'invalid_request', 'unsupported_media_type', `Unsupported media type "${contentType}" in request.`);
  },
  /** 402 on the local-evaluation feed when the organization is over its flag quota (research §2.9). */
  quotaLimited(): ApiError {
    return new ApiError(402, 'quota_limited', 'payment_required', 'You have exceeded your feature flag request quota');
  },
  /**
   * 429 throttled (research/posthog-management-api.md §5.4), with `Retry-After` in whole seconds.
   */
  throttled(retryAfterSeconds: number): ApiError {
    const s = Math.max(1, Math.ceil(retryAfterSeconds));
    return new ApiError(429, 'throttled_error', 'throttled', `Request was throttled. Expected available in ${s} seconds.`, null, { headers: { 'retry-after': String(s) } });
  },
  /** 503: a node cannot accept more work (for example the capture outbox is full). */
  unavailable(code: string, detail: string): ApiError {
    return new ApiError(503, 'server_error', code, detail);
  },
  /** 504: a query ran past its time limit (PostHog's DatastoreQueryTimeOut: 504, code `error`). */
  queryTimeout(): ApiError {
    return new ApiError(504, 'server_error', 'error', 'Query has hit the max execution time before completing. Try a shorter date range or a simpler metric.');
  },
  /** 500 with a generic message; the cause is logged, never sent. */
  internal(): ApiError {
    return new ApiError(500, 'server_error', 'error', 'A server error occurred.');
  },
} as const;

/** True when `e` is an {@link ApiError}. */
export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
