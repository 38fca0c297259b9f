/**
 * DRF LimitOffset pagination as PostHog serves it (research/posthog-management-api.md §5.5):
 * default `limit` 100, no maximum, invalid or negative values fall back to defaults, absolute
 * `next`/`previous` links that keep the other query parameters.
 */

/** Reads `limit` and `offset` from the query string. */
export function parseLimitOffset(query: URLSearchParams, defaultLimit = 100): { limit: number; offset: number } {
  return { limit: positiveInt(query.get('limit'), defaultLimit, 1), offset: positiveInt(query.get('offset'), 0, 0) };
}

function positiveInt(raw: string | null, fallback: number, min: number): number {
  if (raw === null || !/^\d+$/.test(raw.trim())) return fallback;
  const n = Number(raw.trim());
  return Number.isSafeInteger(n) && n >= min ? n : fallback;
}

/** The page envelope of spec §2.7. */
export interface Page<T> { count: number; next: string | null; previous: string | null; results: T[] }

/**
 * Builds the envelope: `next` when offset+limit < count; `previous` null at offset 0, with the
 * `offset` parameter removed when offset-limit <= 0 (DRF behaviour).
 */
export function pageEnvelope<T>(url: URL, count: number, limit: number, offset: number, results: T[]): Page<T> {
  let next: string | null = null;
  if (offset + limit < count) {
    const u = new URL(url);
    u.searchParams.set('limit', String(limit));
    u.searchParams.set('offset', String(offset + limit));
    next = u.toString();
  }
  let previous: string | null = null;
  if (offset > 0) {
    const u = new URL(url);
    u.searchParams.set('limit', String(limit));
    if (offset - limit <= 0) u.searchParams.delete('offset');
    else u.searchParams.set('offset', String(offset - limit));
    previous = u.toString();
  }
  return { count, next, previous, results };
}
