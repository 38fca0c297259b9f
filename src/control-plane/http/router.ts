/**
 * Path router: matches a method and path against declared routes. Patterns are split into
 * segments once at construction; a lookup walks candidate routes with the same segment count,
 * so matching costs O(routes × segments) with no regex per request. Literal segments win over
 * `:param` segments (so `/feature_flags/activity` beats `/feature_flags/:id`).
 */
import type { Method, Route } from './types.js';

interface Compiled { route: Route; segments: string[]; literals: number }

/** Result of {@link Router.match}. */
export type Match =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: Method[] }
  | { kind: 'not_found' };

/** Splits a path into non-empty segments (`/a/b/` → [a, b]). */
function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

/** Routes compiled for matching. */
export class Router {
  private readonly bySize = new Map<number, Compiled[]>();

  /** @throws Error when two routes declare the same method and pattern. */
  constructor(routes: readonly Route[]) {
    const seen = new Set<string>();
    for (const route of routes) {
      const id = `${route.method} ${split(route.path).join('/')}`;
      if (seen.has(id)) throw new Error(`duplicate route ${id}`);
      seen.add(id);
      const segments = split(route.path);
      const list = this.bySize.get(segments.length) ?? [];
      list.push({ route, segments, literals: segments.filter((s) => !s.startsWith(':')).length });
      this.bySize.set(segments.length, list);
    }
    for (const list of this.bySize.values()) list.sort((a, b) => b.literals - a.literals || literalRank(a, b));
  }

  /** Finds the route for `method` and `path` (already percent-decoded segments are not assumed). */
  match(method: string, path: string): Match {
    const segs = split(path);
    const list = this.bySize.get(segs.length);
    if (!list) return { kind: 'not_found' };
    const allow: Method[] = [];
    let bestPattern: string[] | null = null;
    for (const c of list) {
      const params = bind(c.segments, segs);
      if (!params) continue;
      // Only routes with the same (most specific) pattern count for 405.
      if (bestPattern && bestPattern.join('/') !== c.segments.join('/')) continue;
      bestPattern = c.segments;
      if (c.route.method === method) return { kind: 'found', route: c.route, params };
      allow.push(c.route.method);
    }
    return allow.length > 0 ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
  }
}

/** Among equally literal patterns, the one whose first literal comes earlier wins (stable). */
function literalRank(a: Compiled, b: Compiled): number {
  for (let i = 0; i < a.segments.length; i++) {
    const la = !a.segments[i]!.startsWith(':');
    const lb = !b.segments[i]!.startsWith(':');
    if (la !== lb) return la ? -1 : 1;
  }
  return 0;
}

function bind(pattern: string[], segs: string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const s = segs[i]!;
    if (p.startsWith(':')) {
      let v: string;
      try { v = decodeURIComponent(s); } catch { return null; }
      params[p.slice(1)] = v;
    } else if (p !== s) {
      return null;
    }
  }
  return params;
}
