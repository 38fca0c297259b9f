/**
 * Reads of the events API: one page of a project's events newest first, keyset-paged on
 * (timestamp, uuid) over the `events_project_time_uuid` index (migration 0021), and one event by
 * uuid; each shaped as PostHog's ClickhouseEventSerializer (ee/clickhouse/models/event.py):
 * `{id, distinct_id, properties, event, timestamp, person, elements, elements_chain}`.
 *
 * - `timestamp` is Python's `isoformat()` of the UTC instant (`2024-05-01T10:00:00.123000+00:00`,
 *   no fraction when it is zero), exact to the microsecond so it doubles as the cursor.
 * - `person` is `{is_identified, distinct_ids: [first], properties: {email, name, username}}` of
 *   the person the distinct id belongs to now, or null.
 * - Switchyard keeps no autocapture element rows: `elements` is `[]`, `elements_chain` the
 *   event's `$elements_chain` property when it is a string, else `""`.
 * - `person_id` selects the events ingested with that person or with a person merged into it
 *   since (PostHog's person-on-events rule).
 */
import type { Handle, Sql } from '../db/connect.js';
import { eventFiltersSql } from '../events/property-filters.js';
import { ANONYMOUS_ID_SQL_RE, eventPersonUuids, findPerson } from '../persons/lookup.js';
import type { EventListQuery } from './list-query.js';

/** An event as the API answers it. */
export interface ApiEvent {
  id: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  event: string;
  timestamp: string;
  person: { is_identified: boolean; distinct_ids: string[]; properties: Record<string, unknown> } | null;
  elements: unknown[];
  elements_chain: string;
}

interface EventRow { uuid: string; event: string; distinct_id: string; properties: Record<string, unknown>; ts: string }

/** Person properties PostHog copies onto an event's `person`. */
const PERSON_DISPLAY_KEYS = ['email', 'name', 'username'] as const;

/** `YYYY-MM-DDTHH:MI:SS.US` (UTC) → Python isoformat with `+00:00`. */
function isoformat(ts: string): string {
  return `${ts.endsWith('.000000') ? ts.slice(0, -7) : ts}+00:00`;
}

/**
 * One page: at most `q.limit` events plus whether more follow. Each page is a bounded backward
 * index range scan (the cursor is `(timestamp, uuid) < (before, before_uuid)`).
 * @throws ApiError 400 for a malformed `person_id` or unsupported property filters.
 */
export async function listEvents(sql: Sql, projectId: number, q: EventListQuery): Promise<{ results: ApiEvent[]; more: boolean }> {
  let persons = sql`TRUE`;
  if (q.personId !== null) {
    const person = await findPerson(sql, projectId, q.personId);
    if (!person) return { results: [], more: false };
    persons = sql`e.person_id = ANY(${await eventPersonUuids(sql, projectId, person.uuid)}::uuid[])`;
  }
  const props = eventFiltersSql(sql, q.properties, 'properties');
  // Without a cursor the upper bound is PostHog's: nothing more than 5 s in the future.
  const upper = q.before === null ? sql`e.timestamp < now() + interval '5 seconds'`
    : q.beforeUuid === null ? sql`e.timestamp < ${q.before}::timestamptz`
      // The plain bound lets Postgres skip later month partitions; the row comparison is the keyset.
      : sql`e.timestamp <= ${q.before}::timestamptz AND (e.timestamp, e.uuid) < (${q.before}::timestamptz, ${q.beforeUuid}::uuid)`;
  const rows = await sql<EventRow[]>`
    SELECT e.uuid::text AS uuid, e.event, e.distinct_id, e.properties,
      to_char(e.timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS ts
    FROM events e
    WHERE e.project_id = ${projectId} AND ${upper}
      ${q.after === null ? sql`` : sql`AND e.timestamp > ${q.after}::timestamptz`}
      ${q.event === null ? sql`` : sql`AND e.event = ${q.event}`}
      ${q.distinctId === null ? sql`` : sql`AND e.distinct_id = ${q.distinctId}`}
      AND ${persons} AND ${props}
    ORDER BY e.timestamp DESC, e.uuid DESC
    LIMIT ${q.limit + 1}`;
  const more = rows.length > q.limit;
  const page = more ? rows.slice(0, q.limit) : rows;
  return { results: await withPersons(sql, projectId, page), more };
}

/** The event `uuid` of `projectId`, or null (also for another project's event). */
export async function getEvent(sql: Sql, projectId: number, uuid: string): Promise<ApiEvent | null> {
  const rows = await sql<EventRow[]>`
    SELECT e.uuid::text AS uuid, e.event, e.distinct_id, e.properties,
      to_char(e.timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS ts
    FROM events e WHERE e.project_id = ${projectId} AND e.uuid = ${uuid}::uuid
    ORDER BY e.timestamp DESC LIMIT 1`;
  return rows.length === 0 ? null : (await withPersons(sql, projectId, rows))[0]!;
}

/** Shapes `rows`, attaching the current person of each distinct id (one query for the page). */
async function withPersons(h: Handle, projectId: number, rows: readonly EventRow[]): Promise<ApiEvent[]> {
  const ids = [...new Set(rows.map((r) => r.distinct_id))];
  const people = new Map<string, ApiEvent['person']>();
  if (ids.length > 0) {
    const found = await h<{ distinct_id: string; is_identified: boolean; properties: Record<string, unknown>; first_id: string }[]>`
      SELECT d.distinct_id, p.is_identified, p.properties,
        (SELECT x.distinct_id FROM person_distinct_ids x WHERE x.project_id = p.project_id AND x.person_id = p.id
          ORDER BY x.distinct_id ~ ${ANONYMOUS_ID_SQL_RE}, x.distinct_id LIMIT 1) AS first_id
      FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.project_id = ${projectId} AND d.distinct_id = ANY(${ids}::text[])`;
    for (const f of found) {
      const properties: Record<string, unknown> = {};
      for (const k of PERSON_DISPLAY_KEYS) if (k in f.properties) properties[k] = f.properties[k];
      people.set(f.distinct_id, { is_identified: f.is_identified, distinct_ids: [f.first_id], properties });
    }
  }
  return rows.map((r) => ({
    id: r.uuid,
    distinct_id: r.distinct_id,
    properties: r.properties,
    event: r.event,
    timestamp: isoformat(r.ts),
    person: people.get(r.distinct_id) ?? null,
    elements: [],
    elements_chain: typeof r.properties.$elements_chain === 'string' ? r.properties.$elements_chain : '',
  }));
}
