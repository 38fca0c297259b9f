/**
 * Query parameters of `GET /api/projects/:id/events/` (PostHog `posthog/api/event.py`
 * EventViewSet.list): `event`, `distinct_id`, `person_id`, `properties` (property-filter JSON),
 * `after` / `before` (ISO 8601, exclusive bounds), `limit` (default 100), and the cursor this
 * service adds to PostHog's `next` link, `before_uuid`: with it, `before` and `before_uuid`
 * together mean "strictly after the event (before, before_uuid) in newest-first order", so events
 * sharing a timestamp are neither skipped nor repeated across pages (PostHog's own link carries
 * only `before`, which skips them). Bad values answer 400 with PostHog's error shape.
 */
import { errors } from '../../errors.js';

/** Most events one page returns (PostHog has no bound; an unbounded page would be held in memory whole). */
export const MAX_EVENTS_LIMIT = 10_000;
/** Page size when `limit` is absent (PostHog's default). */
export const DEFAULT_EVENTS_LIMIT = 100;

/** A parsed events-list request. Timestamps stay ISO text so microseconds survive the round trip. */
export interface EventListQuery {
  event: string | null;
  distinctId: string | null;
  /** A person's numeric id or uuid, as given. */
  personId: string | null;
  /** Parsed `properties` JSON (a filter list or group); null when absent. */
  properties: unknown;
  after: string | null;
  before: string | null;
  /** Tie-break of the cursor: only with `before`. */
  beforeUuid: string | null;
  limit: number;
}

const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const HAS_ZONE = /(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;
/** A UUID in its textual form (any version, either case). */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An ISO 8601 date or date-time as text Postgres reads as a UTC instant (a value without a zone
 * is UTC). @throws ApiError 400 attr `attr`.
 */
export function isoParam(raw: string, attr: string): string {
  const s = raw.trim();
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(s);
  if (!ISO.test(s) || Number.isNaN(Date.parse(dateOnly ? s : HAS_ZONE.test(s) ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`))) {
    throw errors.validation(`"${raw}" is not an ISO 8601 timestamp.`, attr);
  }
  if (dateOnly) return `${s}T00:00:00Z`;
  return HAS_ZONE.test(s) ? s : `${s}Z`;
}

/** Parses the list parameters. @throws ApiError 400 naming the parameter. */
export function parseEventListQuery(q: URLSearchParams): EventListQuery {
  let limit = DEFAULT_EVENTS_LIMIT;
  const rawLimit = q.get('limit');
  if (rawLimit !== null && rawLimit !== '') {
    if (!/^\d+$/.test(rawLimit.trim())) throw errors.validation('A valid integer is required.', 'limit', 'invalid');
    limit = Number(rawLimit.trim());
    if (limit < 1) throw errors.validation('Ensure this value is greater than or equal to 1.', 'limit', 'min_value');
    if (limit > MAX_EVENTS_LIMIT) throw errors.validation(`Ensure this value is less than or equal to ${MAX_EVENTS_LIMIT}.`, 'limit', 'max_value');
  }
  let properties: unknown = null;
  const rawProps = q.get('properties');
  if (rawProps !== null && rawProps.trim() !== '') {
    try { properties = JSON.parse(rawProps); } catch { throw errors.validation('Properties are unparsable!', 'properties'); }
  }
  const orderBy = q.get('orderBy');
  if (orderBy !== null && orderBy.replace(/\s/g, '') !== '["-timestamp"]') {
    throw errors.validation('Only orderBy ["-timestamp"] (newest first) is supported.', 'orderBy');
  }
  const before = q.get('before');
  const beforeUuid = q.get('before_uuid');
  if (beforeUuid !== null && (before === null || !UUID_RE.test(beforeUuid))) {
    throw errors.validation('before_uuid must be a UUID and comes with before (use the next link as given).', 'before_uuid');
  }
  const text = (k: string) => { const v = q.get(k); return v === null || v === '' ? null : v; };
  return {
    event: text('event'),
    distinctId: text('distinct_id'),
    personId: text('person_id'),
    properties,
    after: text('after') === null ? null : isoParam(q.get('after')!, 'after'),
    before: before === null || before === '' ? null : isoParam(before, 'before'),
    beforeUuid: beforeUuid === null ? null : beforeUuid.toLowerCase(),
    limit,
  };
}

/** The `next` link: the request's parameters with `before` / `before_uuid` set to the page's last event. */
export function nextEventsUrl(url: URL, lastTimestamp: string, lastUuid: string): string {
  const u = new URL(url);
  u.searchParams.set('before', lastTimestamp);
  u.searchParams.set('before_uuid', lastUuid);
  return u.toString();
}
