/**
 * Formatting shared by the events explorer, the persons pages and scheduled changes: instants as
 * UTC text (`2026-01-31 09:05:00 UTC`), property values as text, and a person's display name
 * (PostHog's order: email, name, username, else the first distinct id).
 */

/** `iso` as `YYYY-MM-DD HH:MM:SS UTC` (milliseconds dropped); the input when it is no date. */
export function utc(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A property value as text: strings as they are, everything else as JSON. */
export function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** A person's name for display. */
export function personName(p: { name?: string | null; properties?: Record<string, unknown>; distinct_ids?: string[] } | null): string {
  if (!p) return '–';
  const props = p.properties ?? {};
  for (const k of ['email', 'name', 'username']) if (typeof props[k] === 'string' && props[k] !== '') return props[k] as string;
  return p.name || p.distinct_ids?.[0] || '–';
}

/** `next` (an absolute URL the API returned) as a path for {@link api}. */
export function pathOf(next: string): string {
  const u = new URL(next, location.origin);
  return u.pathname + u.search;
}
