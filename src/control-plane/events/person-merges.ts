/**
 * Person merges in event queries: events keep the person they were ingested with, and
 * `person_overrides` (written by ingestion on merges) maps an old person to the one it was merged
 * into, so queries that count persons count a merged person once (PostHog's person-on-events
 * overrides). Used by experiment results and insights.
 */
import type { Sql, Tx } from '../db/connect.js';

/** True when the project has person overrides (merges since ingestion) to apply. */
export async function hasMerges(tx: Tx | Sql, projectId: number): Promise<boolean> {
  const [r] = await tx<{ any: boolean }[]>`SELECT EXISTS (SELECT 1 FROM person_overrides WHERE project_id = ${projectId}) AS any`;
  return r!.any;
}

/**
 * SQL of the entity an event belongs to (alias `e`, person_overrides alias `o`): the person the
 * event was ingested with, or the person it was merged into since (person_overrides), a uuid
 * (null for a personless event). For groups, the event's `$group_<i>` (text).
 */
export function entitySql(tx: Tx | Sql, groupIndex: number | null, merges = true) {
  if (groupIndex !== null) return tx`(e.properties->>${`$group_${groupIndex}`})`;
  return merges ? tx`COALESCE(o.override_person_uuid, e.person_id)` : tx`e.person_id`;
}

/** The join that applies person merges (a no-op for groups, or when the project has none). */
export function personJoinSql(tx: Tx | Sql, groupIndex: number | null, merges = true) {
  return groupIndex === null && merges ? tx`LEFT JOIN person_overrides o ON o.project_id = e.project_id AND o.old_person_uuid = e.person_id` : tx``;
}
