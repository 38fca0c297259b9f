/**
 * 405 answers (RFC 9110 §15.5.6; PostHog's body `Method "X" not allowed.`): for every route
 * pattern, the methods it does not declare get a hidden route that answers 405 with `Allow`
 * listing the ones it does. Registering them per pattern also keeps a literal path such as
 * `/feature_flags/activity` from falling through to `/feature_flags/:id` for another method.
 */
import type { Method, Route } from './types.js';

/** Every method a client may send that the router answers. */
export const ROUTED_METHODS: readonly string[] = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'];

/**
 * One hidden 405 route: `path` answers each of `methods` with `Allow: allow`. One route per
 * pattern carries all its methods: the router registers each method, but the server builds one
 * route's hooks and context instead of one per method (three quarters of the control plane's
 * routes are these, and building them was most of its start-up).
 */
export interface MethodNotAllowed { path: string; methods: string[]; allow: Method[] }

/**
 * The 405 routes `routes` need. @throws Error when two routes declare the same method and
 * pattern (a programming error caught at start-up).
 */
export function methodNotAllowedRoutes(routes: readonly Route[]): MethodNotAllowed[] {
  const byPattern = new Map<string, Method[]>();
  for (const r of routes) {
    const pattern = normalisePattern(r.path);
    const methods = byPattern.get(pattern) ?? [];
    if (methods.includes(r.method)) throw new Error(`duplicate route ${r.method} ${pattern}`);
    methods.push(r.method);
    byPattern.set(pattern, methods);
  }
  const out: MethodNotAllowed[] = [];
  for (const [path, allow] of byPattern) {
    const methods = ROUTED_METHODS.filter((method) => !(allow as string[]).includes(method));
    if (methods.length > 0) out.push({ path, methods, allow: [...allow] });
  }
  return out;
}

/** A pattern as registered: no trailing slash except the root (`/api/x/` → `/api/x`). */
export function normalisePattern(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}
