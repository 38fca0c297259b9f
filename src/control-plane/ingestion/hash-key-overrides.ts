/**
 * Experience-continuity hash-key overrides (research/posthog-flag-evaluation.md §2.6):
 * `feature_flag_hash_key_overrides (project, person, flag key) → hash_key`, written "where
 * missing" for the persons of a set of distinct ids, and carried over when persons merge.
 * Every inserted or removed row enters the change log (kind `hash_key_override`), so nodes
 * bucket with the override without asking Postgres.
 */
import type { Sql, Tx } from '../db/connect.js';
import { ChangeSet } from './changes.js';
import { lockProjects } from './locks.js';

/**
 * For every existing person among `distinctIds`, inserts `(person, flagKey) → hashKey` for each
 * of `flagKeys` that has no override yet (existing overrides are never changed: first writer
 * wins, PostHog `set_feature_flag_hash_key_overrides`). Distinct ids without a person are
 * ignored. One transaction, change-log entries included. @returns the number of rows inserted.
 */
export async function writeHashKeyOverrides(sql: Sql, projectId: number, distinctIds: readonly string[],
  flagKeys: readonly string[], hashKey: string): Promise<number> {
  if (distinctIds.length === 0 || flagKeys.length === 0) return 0;
  return sql.begin(async (tx) => {
    await lockProjects(tx, [projectId]);
    const changes = new ChangeSet();
    const n = await writeHashKeyOverridesTx(tx, changes, projectId, distinctIds, flagKeys, hashKey);
    await changes.flush(tx);
    return n;
  }) as Promise<number>;
}

/**
 * {@link writeHashKeyOverrides} inside a caller's transaction (the project lock held by the
 * caller), collecting its change-log entries into `changes`: ingestion applies hash-key override
 * records (override-records.ts) this way, in the batch's transaction. @returns rows inserted.
 */
export async function writeHashKeyOverridesTx(tx: Tx, changes: ChangeSet, projectId: number, distinctIds: readonly string[],
  flagKeys: readonly string[], hashKey: string): Promise<number> {
  if (distinctIds.length === 0 || flagKeys.length === 0) return 0;
  const rows = await tx<{ uuid: string; feature_flag_key: string }[]>`
    WITH people AS (
      SELECT DISTINCT p.id, p.uuid FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.project_id = ${projectId} AND d.distinct_id = ANY(${[...distinctIds]}::text[])
    ), ins AS (
      INSERT INTO feature_flag_hash_key_overrides (project_id, person_id, feature_flag_key, hash_key)
      SELECT ${projectId}, people.id, k, ${hashKey} FROM people, unnest(${[...new Set(flagKeys)]}::text[]) AS k
      ON CONFLICT DO NOTHING
      RETURNING person_id, feature_flag_key
    )
    SELECT people.uuid, ins.feature_flag_key FROM ins JOIN people ON people.id = ins.person_id`;
  for (const r of rows) {
    changes.overrideUpserted({ project_id: projectId, person_id: r.uuid, feature_flag_key: r.feature_flag_key, hash_key: hashKey });
  }
  return rows.length;
}

/**
 * Moves the overrides of person `from` onto person `into` during a merge: `into` keeps its own
 * override for a flag and gains `from`'s for flags it had none for; `from`'s rows are deleted.
 */
export async function moveHashKeyOverrides(tx: Tx, changes: ChangeSet, projectId: number,
  from: { id: number; uuid: string }, into: { id: number; uuid: string }): Promise<void> {
  const moved = await tx<{ feature_flag_key: string; hash_key: string }[]>`
    INSERT INTO feature_flag_hash_key_overrides (project_id, person_id, feature_flag_key, hash_key)
    SELECT project_id, ${into.id}, feature_flag_key, hash_key FROM feature_flag_hash_key_overrides
    WHERE person_id = ${from.id}
    ON CONFLICT DO NOTHING
    RETURNING feature_flag_key, hash_key`;
  const removed = await tx<{ feature_flag_key: string }[]>`
    DELETE FROM feature_flag_hash_key_overrides WHERE person_id = ${from.id} RETURNING feature_flag_key`;
  for (const r of removed) changes.overrideDeleted(projectId, from.uuid, r.feature_flag_key);
  for (const r of moved) {
    changes.overrideUpserted({ project_id: projectId, person_id: into.uuid, feature_flag_key: r.feature_flag_key, hash_key: r.hash_key });
  }
}
