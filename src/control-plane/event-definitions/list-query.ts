/**
 * D1 query parameters (research/posthog-management-api.md §4.2), parsed once into a typed
 * query. Unknown `ordering` values are ignored; an unknown `event_type` is 400 attr
 * `event_type`; malformed JSON lists are 400 naming their parameter.
 */
import { errors } from '../../errors.js';

/** One ORDER BY term. */
export interface OrderTerm { field: string; desc: boolean }

/** The parsed D1 query. */
export interface DefinitionListQuery {
  /** Whitespace-separated terms of `search`; every one must match `name ILIKE %term%`. */
  search: string[];
  eventType: 'event' | 'event_custom' | 'event_posthog';
  /** `excluded_properties`: event names to omit. */
  excluded: string[];
  /** `names`: exact names to keep (null = no filter). */
  names: string[] | null;
  /** `tags`: keep definitions having any of these (null = no filter). */
  tags: string[] | null;
  excludeHidden: boolean;
  excludeStale: boolean;
  /** `verified`: true = verified or a core PostHog event; false = neither; null = no filter. */
  verified: boolean | null;
  ordering: OrderTerm[];
}

/** `ordering` values accepted (with an optional `-` prefix). */
export const ORDERING_FIELDS: readonly string[] = Object.freeze(['name', 'last_seen_at', 'last_seen_at::date', 'created_at', 'created_at::date']);
/** Default order: `-last_seen_at::date, name`. */
const DEFAULT_ORDERING: readonly OrderTerm[] = Object.freeze([{ field: 'last_seen_at::date', desc: true }, { field: 'name', desc: false }]);
const EVENT_TYPES: Record<string, DefinitionListQuery['eventType']> = {
  event: 'event', all: 'event', action_event: 'event', event_custom: 'event_custom', event_posthog: 'event_posthog',
};

function bool(raw: string | null): boolean {
  return raw !== null && ['true', '1', 'yes', 'on'].includes(raw.trim().toLowerCase());
}

/** A JSON list of strings (non-strings are stringified), or null when absent. @throws ApiError 400 attr `name`. */
function jsonList(q: URLSearchParams, name: string): string[] | null {
  const raw = q.get(name);
  if (raw === null || raw.trim() === '') return null;
  let v: unknown;
  try { v = JSON.parse(raw); } catch { throw errors.validation(`${name} must be a JSON-encoded list.`, name); }
  if (!Array.isArray(v)) throw errors.validation(`${name} must be a JSON-encoded list.`, name);
  return v.filter((x) => x !== null && x !== undefined).map((x) => String(x));
}

/** Parses D1's query string. @throws ApiError 400 (event_type, excluded_properties, tags). */
export function parseDefinitionListQuery(q: URLSearchParams): DefinitionListQuery {
  const search = (q.get('search') ?? '').split(/\s+/).filter((t) => t.length > 0);
  const rawType = q.get('event_type');
  const eventType = rawType === null || rawType === '' ? 'event' : EVENT_TYPES[rawType];
  if (!eventType) throw errors.validation(`"${rawType}" is not a valid choice.`, 'event_type', 'invalid_choice');
  const namesRaw = q.getAll('names').flatMap((n) => n.split(',')).map((n) => n.trim()).filter((n) => n.length > 0);
  const verifiedRaw = q.get('verified');
  const ordering: OrderTerm[] = [];
  for (const raw of q.getAll('ordering').flatMap((o) => o.split(','))) {
    const t = raw.trim();
    const desc = t.startsWith('-');
    const field = desc ? t.slice(1) : t;
    if (ORDERING_FIELDS.includes(field) && !ordering.some((o) => o.field === field)) ordering.push({ field, desc });
  }
  let order: OrderTerm[];
  if (ordering.length > 0) order = ordering;
  else if (search.length > 0) order = [{ field: 'length(name)', desc: false }, ...DEFAULT_ORDERING]; // shorter names first
  else order = [...DEFAULT_ORDERING];
  if (!order.some((o) => o.field === 'name')) order.push({ field: 'name', desc: false }); // tiebreaker
  return {
    search,
    eventType,
    excluded: jsonList(q, 'excluded_properties') ?? [],
    names: namesRaw.length > 0 ? namesRaw : null,
    tags: jsonList(q, 'tags'),
    excludeHidden: bool(q.get('exclude_hidden')),
    excludeStale: bool(q.get('exclude_stale')),
    verified: verifiedRaw === null || verifiedRaw === '' ? null : bool(verifiedRaw),
    ordering: order,
  };
}
