/**
 * Reads of the persons API (PostHog `posthog/api/person.py` PersonViewSet list / retrieve), each
 * person shaped as PostHog's PersonSerializer: `{id, name, distinct_ids, properties, created_at,
 * uuid, last_seen_at}`.
 *
 * - `name`: the first of the properties `email`, `name`, `username` that is set, else the first
 *   distinct id (identified-looking ids first), else the numeric id (PostHog `get_person_name`).
 * - `distinct_ids`: every distinct id, identified-looking first, then by text.
 * - `last_seen_at`: null (Switchyard keeps no per-person last-seen time).
 *
 * List filters (ANDed): `search` (email or name containing it, case-insensitive, or a distinct id
 * or uuid equal to it), `distinct_id` (the person holding that distinct id), `email` (exact), and
 * `properties` (person property filters, PostHog JSON, translated by events/property-filters.ts).
 * Order: newest person first by numeric id (PostHog orders by created_at, then id; here the
 * id order keeps offset pages on the `persons_project` index).
 */
import type { Handle, Sql } from '../db/connect.js';
import { errors } from '../../errors.js';
import { isJsonObject } from '../../json-shapes.js';
import { eventFiltersSql } from '../events/property-filters.js';
import { ANONYMOUS_ID_SQL_RE, type PersonRow } from './lookup.js';

/** A person as the API answers it. */
export interface ApiPerson {
  id: number;
  name: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  created_at: string;
  uuid: string;
  last_seen_at: null;
}

/** Parsed list filters. */
export interface PersonListQuery {
  search: string | null;
  distinctId: string | null;
  email: string | null;
  /** Parsed `properties` JSON, or null. */
  properties: unknown;
}

const DISPLAY_KEYS = ['email', 'name', 'username'] as const;

/** Reads the list filters. @throws ApiError 400 for unparsable `properties`. */
export function parsePersonListQuery(q: URLSearchParams): PersonListQuery {
  const text = (k: string) => { const v = q.get(k); return v === null || v.trim() === '' ? null : v.trim(); };
  let properties: unknown = null;
  const raw = text('properties');
  if (raw !== null) {
    try { properties = JSON.parse(raw); } catch { throw errors.validation('Properties are unparsable!', 'properties'); }
  }
  return { search: text('search'), distinctId: text('distinct_id'), email: text('email'), properties: personFilters(properties) };
}

/**
 * Person property filters as the shared translator reads them: `type: "person"` (or none) becomes
 * the property type it filters on (the `properties` column of the aliased row).
 * @throws ApiError 400 for cohort or other filter types.
 */
function personFilters(f: unknown): unknown {
  if (Array.isArray(f)) return f.map(personFilters);
  if (!isJsonObject(f)) return f;
  if (Array.isArray(f.values) && (f.type === 'AND' || f.type === 'OR')) return { ...f, values: f.values.map(personFilters) };
  if (f.type !== undefined && f.type !== 'person') {
    throw errors.validation(`Property filters of type "${String(f.type)}" are not supported here (person properties only).`, 'properties');
  }
  return { ...f, type: 'event' };
}

/** One offset page of persons matching `q`; `limit + 1` rows are read to know whether more follow. */
export async function listPersons(sql: Sql, projectId: number, q: PersonListQuery, limit: number, offset: number): Promise<{ results: ApiPerson[]; more: boolean }> {
  const like = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const search = q.search === null ? sql`TRUE` : sql`(
      e.properties->>'email' ILIKE ${like(q.search)} OR e.properties->>'name' ILIKE ${like(q.search)}
      OR e.id = (SELECT d.person_id FROM person_distinct_ids d WHERE d.project_id = ${projectId} AND d.distinct_id = ${q.search})
      OR e.uuid::text = ${q.search.toLowerCase()})`;
  const byDistinctId = q.distinctId === null ? sql`TRUE`
    : sql`e.id = (SELECT d.person_id FROM person_distinct_ids d WHERE d.project_id = ${projectId} AND d.distinct_id = ${q.distinctId})`;
  const email = q.email === null ? sql`TRUE` : sql`e.properties->>'email' = ${q.email}`;
  const rows = await sql<PersonRow[]>`
    SELECT e.id, e.uuid::text AS uuid, e.project_id, e.properties, e.is_identified, e.created_at
    FROM persons e
    WHERE e.project_id = ${projectId} AND ${search} AND ${byDistinctId} AND ${email} AND ${eventFiltersSql(sql, q.properties, 'properties')}
    ORDER BY e.id DESC LIMIT ${limit + 1} OFFSET ${offset}`;
  const more = rows.length > limit;
  return { results: await serializePersons(sql, more ? rows.slice(0, limit) : rows), more };
}

/** Shapes persons rows, reading their distinct ids in one query. */
export async function serializePersons(h: Handle, rows: readonly PersonRow[]): Promise<ApiPerson[]> {
  if (rows.length === 0) return [];
  const ids = await h<{ person_id: number; distinct_id: string }[]>`
    SELECT person_id, distinct_id FROM person_distinct_ids
    WHERE project_id = ${rows[0]!.project_id} AND person_id = ANY(${rows.map((r) => r.id)}::bigint[])
    ORDER BY person_id, distinct_id ~ ${ANONYMOUS_ID_SQL_RE}, distinct_id`;
  const byPerson = new Map<number, string[]>();
  for (const r of ids) {
    const list = byPerson.get(Number(r.person_id)) ?? [];
    list.push(r.distinct_id);
    byPerson.set(Number(r.person_id), list);
  }
  return rows.map((r) => {
    const distinctIds = byPerson.get(Number(r.id)) ?? [];
    return {
      id: Number(r.id),
      name: displayName(r, distinctIds),
      distinct_ids: distinctIds,
      properties: r.properties,
      created_at: r.created_at.toISOString(),
      uuid: r.uuid,
      last_seen_at: null,
    };
  });
}

function displayName(p: PersonRow, distinctIds: readonly string[]): string {
  for (const k of DISPLAY_KEYS) {
    const v = p.properties[k];
    if (v !== undefined && v !== null && v !== '' && v !== false && v !== 0) return String(v);
  }
  return distinctIds[0] ?? String(p.id);
}
