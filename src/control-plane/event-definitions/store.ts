/**
 * SQL of the event-definitions resource: rows with their embedded users and 30-day volume,
 * the D1 list query, update and delete. Rows are written by ingestion
 * (ingestion/definitions.ts) and edited through D3.
 */
import type { Sql, Tx } from '../db/connect.js';
import type { UserRow } from '../users/serialize.js';
import type { DefinitionListQuery } from './list-query.js';

type Handle = Sql | Tx;

/** Days counted in `volume_30_day`, and the `exclude_stale` window. */
export const VOLUME_DAYS = 30;

/** An `event_definitions` row with joined users and the computed volume. */
export interface DefinitionRow {
  id: string;
  project_id: number;
  name: string;
  description: string;
  tags: string[];
  owner_id: number | null;
  verified: boolean;
  verified_by_id: number | null;
  verified_at: Date | null;
  hidden: boolean;
  post_to_slack: boolean;
  default_columns: string[];
  created_at: Date | null;
  last_seen_at: Date | null;
  updated_at: Date;
  updated_by_id: number | null;
  volume_30_day: number;
  owner: UserRow | null;
  updated_by: UserRow | null;
  verified_by: UserRow | null;
}

/** The writable columns of D3 (undefined = unchanged). */
export interface DefinitionUpdate {
  description?: string;
  tags?: string[];
  owner_id?: number | null;
  verified?: boolean;
  verified_by_id?: number | null;
  verified_at?: Date | null;
  hidden?: boolean;
  post_to_slack?: boolean;
  default_columns?: string[];
}

function selectRows(h: Handle) {
  return h`SELECT d.*, to_jsonb(o) AS owner, to_jsonb(ub) AS updated_by, to_jsonb(vb) AS verified_by,
      (SELECT coalesce(sum(v.count), 0)::bigint FROM event_volume_daily v
        WHERE v.project_id = d.project_id AND v.event = d.name
          AND v.day > (now() AT TIME ZONE 'UTC')::date - ${VOLUME_DAYS}::int) AS volume_30_day
    FROM event_definitions d
    LEFT JOIN users o ON o.id = d.owner_id
    LEFT JOIN users ub ON ub.id = d.updated_by_id
    LEFT JOIN users vb ON vb.id = d.verified_by_id`;
}

/** One definition of the project, or null. `forUpdate` locks the row. */
export async function getDefinition(h: Handle, projectId: number, id: string, opts: { forUpdate?: boolean } = {}): Promise<DefinitionRow | null> {
  const rows = await h<DefinitionRow[]>`${selectRows(h)} WHERE d.project_id = ${projectId} AND d.id = ${id}
    ${opts.forUpdate ? h`FOR UPDATE OF d` : h``}`;
  return rows[0] ?? null;
}

/** One definition of the project by exact name, or null. */
export async function getDefinitionByName(h: Handle, projectId: number, name: string): Promise<DefinitionRow | null> {
  const rows = await h<DefinitionRow[]>`${selectRows(h)} WHERE d.project_id = ${projectId} AND d.name = ${name}`;
  return rows[0] ?? null;
}

/** PostHog core events that `verified=true` lists as verified (posthog/taxonomy CORE_FILTER_DEFINITIONS_BY_GROUP). */
export const CORE_EVENTS: readonly string[] = Object.freeze([
  '$pageview', '$pageleave', '$autocapture', '$screen', '$identify', '$create_alias', '$groupidentify', '$set',
  '$feature_flag_called', '$feature_view', '$feature_interaction', '$feature_enrollment_update', '$rageclick',
  '$dead_click', '$exception', '$web_vitals', '$opt_in', '$copy_autocapture', '$snapshot',
  'survey shown', 'survey sent', 'survey dismissed',
]);

function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function where(h: Handle, projectId: number, q: DefinitionListQuery) {
  let w = h`d.project_id = ${projectId}`;
  for (const term of q.search) w = h`${w} AND d.name ILIKE ${`%${escapeLike(term)}%`}`;
  if (q.eventType === 'event_custom') w = h`${w} AND left(d.name, 1) <> '$'`;
  else if (q.eventType === 'event_posthog') w = h`${w} AND left(d.name, 1) = '$'`;
  if (q.excluded.length > 0) w = h`${w} AND NOT (d.name = ANY(${q.excluded}::text[]))`;
  if (q.names !== null) w = h`${w} AND d.name = ANY(${q.names}::text[])`;
  if (q.tags !== null) w = h`${w} AND d.tags && ${q.tags}::text[]`;
  if (q.excludeHidden) w = h`${w} AND NOT d.hidden`;
  if (q.excludeStale) w = h`${w} AND (d.last_seen_at IS NULL OR d.last_seen_at >= now() - make_interval(days => ${VOLUME_DAYS}))`;
  if (q.verified === true) w = h`${w} AND (d.verified OR d.name = ANY(${CORE_EVENTS as string[]}::text[]))`;
  else if (q.verified === false) w = h`${w} AND NOT d.verified AND NOT (d.name = ANY(${CORE_EVENTS as string[]}::text[]))`;
  return w;
}

/** SQL of each ordering term (allow-list; see list-query.ts). */
const ORDER_SQL: Record<string, string> = {
  name: 'd.name',
  last_seen_at: 'd.last_seen_at',
  'last_seen_at::date': "(d.last_seen_at AT TIME ZONE 'UTC')::date",
  created_at: 'd.created_at',
  'created_at::date': "(d.created_at AT TIME ZONE 'UTC')::date",
  'length(name)': 'length(d.name)',
};

/** A page of the D1 list and the total count. */
export async function listDefinitions(h: Handle, projectId: number, q: DefinitionListQuery, limit: number, offset: number):
  Promise<{ count: number; rows: DefinitionRow[] }> {
  const w = where(h, projectId, q);
  const [{ n }] = await h<{ n: number }[]>`SELECT count(*)::int AS n FROM event_definitions d WHERE ${w}`;
  // Every term comes from the allow-list above; DESC sorts put NULLs last (PostHog).
  const order = q.ordering.map((o) => `${ORDER_SQL[o.field]} ${o.desc ? 'DESC NULLS LAST' : 'ASC NULLS LAST'}`).join(', ');
  const rows = await h<DefinitionRow[]>`${selectRows(h)} WHERE ${w}
    ORDER BY ${h.unsafe(order)}, d.id LIMIT ${limit} OFFSET ${offset}`;
  return { count: n, rows };
}

/** Writes the given columns plus `updated_at` / `updated_by_id`. */
export async function updateDefinition(tx: Tx, id: string, userId: number, u: DefinitionUpdate): Promise<void> {
  const cols: Record<string, unknown> = { updated_by_id: userId };
  for (const [k, v] of Object.entries(u)) if (v !== undefined) cols[k] = v;
  await tx`UPDATE event_definitions SET ${tx(cols as never)}, updated_at = now() WHERE id = ${id}`;
}

/** Hard-deletes a definition. */
export async function deleteDefinition(tx: Tx, id: string): Promise<void> {
  await tx`DELETE FROM event_definitions WHERE id = ${id}`;
}

/** True when `userId` is a user of the organization. */
export async function userInOrganization(h: Handle, organizationId: number, userId: number): Promise<boolean> {
  const rows = await h`SELECT 1 FROM users WHERE id = ${userId} AND organization_id = ${organizationId}`;
  return rows.length > 0;
}
