/**
 * CORS on the node's public endpoints (/flags, /decide, capture, remote config), as PostHog's
 * public services answer browsers (capture-rs and the flags service mirror the request's origin
 * and requested headers with credentials allowed; Django's `cors_response` did the same): any
 * origin may call them, because they are authorised by the project API key in the request, which
 * every web page ships anyway, never by cookies, and they return nothing a cookie would unlock.
 * That is deliberate and limited to these routes: the management API and `/flags/definitions`
 * (personal API keys, server-side SDKs) send no CORS headers and answer no preflights.
 *
 * Actual responses carry the origin through {@link Exchange} (reply.ts); this module answers
 * the preflight (`OPTIONS`): 200, empty body, `Access-Control-Allow-Origin` = the origin (or `*`
 * without one), `-Credentials: true`, `-Methods: GET, POST, OPTIONS`, `-Headers` = the requested
 * ones when they are well-formed header names (else `content-type`), `-Max-Age` one day.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { NodeHttpContext } from './context.js';
import type { RouteLabel } from './metrics.js';
import { Exchange } from './reply.js';

/** Methods a browser may use on the public routes. */
export const PUBLIC_METHODS = 'GET, POST, OPTIONS';

/** A comma-separated list of header names (RFC 9110 tokens), bounded. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;
const MAX_REQUESTED_HEADERS_CHARS = 1024;

/** The `Access-Control-Allow-Headers` value for a preflight's `Access-Control-Request-Headers`. */
export function allowedHeaders(requested: string): string {
  const r = requested.trim();
  return r !== '' && r.length <= MAX_REQUESTED_HEADERS_CHARS && HEADER_LIST.test(r) ? r : 'content-type';
}

/** A uWS handler answering CORS preflights on a public route (counted under `route`). */
export function preflightHandler(ctx: NodeHttpContext, route: RouteLabel): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const origin = req.getHeader('origin');
    const requested = req.getHeader('access-control-request-headers');
    const ex = new Exchange(res, ctx.metrics, route, origin === '' ? '*' : origin);
    ex.send(200, '', [
      ['Access-Control-Allow-Methods', PUBLIC_METHODS],
      ['Access-Control-Allow-Headers', allowedHeaders(requested)],
      ['Access-Control-Max-Age', '86400'],
      ['Vary', 'Access-Control-Request-Headers'],
    ], null);
  };
}
