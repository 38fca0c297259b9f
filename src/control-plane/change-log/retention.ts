/**
 * Change-log retention, in two steps. The log grows with every definition
 * change and, since capture, every person, group and override change.
 *
 * 1. Compaction ({@link compactChangeLog}): past the catch-up window — the newest
 *    `windowRevisions` revisions, and no more of them than `windowBytes` of payload — only the
 *    newest entry of each entity (kind, entity id) is kept. Every entry is a full entity state
 *    (or a delete), so a node replaying from any revision still ends at exactly the head's
 *    state; it just skips states that were superseded (Kafka's log compaction). A person
 *    updated by every one of a million events costs one entry, not a million.
 * 2. Pruning ({@link pruneChangeLog}): a revision is deleted only when it is BOTH more than
 *    `keepRevisions` behind the head AND older than `keepMs`: a node that was away for less
 *    than either bound resumes from the tail; one further behind gets a snapshot
 *    (control-plane/grpc/watch.ts treats a node at or below the horizon `change_log_horizon.pruned_through`,
 *    moved by each prune, as `log_pruned`).
 *
 * Deletes run in chunks of {@link PRUNE_CHUNK_ROWS} rows, each its own short statement, so a
 * large backlog never holds long locks or a long transaction. Safe on any number of replicas
 * at once (concurrent deletes of the same rows just find nothing).
 */
import type { Sql } from '../db/connect.js';

/** Revisions behind the head in which every entry is kept (compaction's catch-up window). */
export const COMPACT_WINDOW_REVISIONS = 100_000;
/** Payload bytes (stored size) the catch-up window holds at most, however few revisions that is. */
export const COMPACT_WINDOW_BYTES = 256 * 1024 * 1024;
/** Revisions examined per compaction statement. */
export const COMPACT_RANGE_REVISIONS = 50_000;

/**
 * Deletes entries past the catch-up window (module doc) that a newer entry of the same entity
 * supersedes; resolves with the number deleted. The window ends at the lower of `head −
 * windowRevisions` and the revision where the newest entries' stored payloads pass
 * `windowBytes`. Runs in short statements over {@link COMPACT_RANGE_REVISIONS} revisions each
 * (the newer entry is found through change_log_entity); safe on several replicas at once.
 * @throws the driver's error when Postgres fails (what was deleted stays deleted).
 */
export async function compactChangeLog(sql: Sql, opts: { windowRevisions?: number; windowBytes?: number } = {}): Promise<number> {
  const windowRevisions = opts.windowRevisions ?? COMPACT_WINDOW_REVISIONS;
  const windowBytes = opts.windowBytes ?? COMPACT_WINDOW_BYTES;
  const [b] = await sql<{ head: number; oldest: number }[]>`
    SELECT coalesce(max(revision), 0)::bigint AS head, coalesce(min(revision), 0)::bigint AS oldest FROM change_log`;
  const head = Number(b!.head);
  let cutoff = head - windowRevisions;
  // The byte bound: the newest revision at which the window's stored payload passes windowBytes.
  const [byBytes] = await sql<{ r: number | null }[]>`
    SELECT max(revision)::bigint AS r FROM (
      SELECT revision, sum(coalesce(pg_column_size(payload), 0)) OVER (ORDER BY revision DESC) AS newer
      FROM change_log WHERE revision > ${cutoff}) w
    WHERE newer > ${windowBytes}`;
  if (byBytes?.r !== null && byBytes?.r !== undefined) cutoff = Math.max(cutoff, Number(byBytes.r));
  let deleted = 0;
  for (let lo = Number(b!.oldest) - 1; lo < cutoff; lo += COMPACT_RANGE_REVISIONS) {
    const hi = Math.min(cutoff, lo + COMPACT_RANGE_REVISIONS);
    const rows = await sql`
      DELETE FROM change_log c WHERE c.revision > ${lo} AND c.revision <= ${hi}
        AND EXISTS (SELECT 1 FROM change_log n WHERE n.kind = c.kind AND n.entity_id = c.entity_id AND n.revision > c.revision)`;
    deleted += rows.count;
  }
  return deleted;
}

/** Revisions always kept behind the head. */
export const KEEP_REVISIONS = 1_000_000;
/** Age always kept, in milliseconds (7 days). */
export const KEEP_MS = 7 * 24 * 60 * 60 * 1000;
/** Rows deleted per statement. */
export const PRUNE_CHUNK_ROWS = 10_000;

/**
 * Deletes the revisions outside both bounds; resolves with the number of rows deleted.
 * @throws the driver's error when Postgres fails (what was deleted before stays deleted).
 */
export async function pruneChangeLog(sql: Sql, opts: { keepRevisions?: number; keepMs?: number } = {}): Promise<number> {
  const keepRevisions = opts.keepRevisions ?? KEEP_REVISIONS;
  const keepMs = opts.keepMs ?? KEEP_MS;
  const [head] = await sql<{ r: number }[]>`SELECT coalesce(max(revision), 0)::bigint AS r FROM change_log`;
  const cutoff = Number(head!.r) - keepRevisions;
  if (cutoff <= 0) return 0;
  const before = new Date(Date.now() - keepMs);
  let deleted = 0;
  for (;;) {
    // The horizon moves in the same statement as the delete (change_log_horizon, migration 0014).
    const [r] = await sql<{ n: number }[]>`
      WITH gone AS (
        DELETE FROM change_log WHERE revision IN (
          SELECT revision FROM change_log WHERE revision <= ${cutoff} AND created_at < ${before}
          ORDER BY revision LIMIT ${PRUNE_CHUNK_ROWS})
        RETURNING revision),
      moved AS (
        UPDATE change_log_horizon SET pruned_through = greatest(pruned_through, (SELECT max(revision) FROM gone))
        WHERE EXISTS (SELECT 1 FROM gone))
      SELECT count(*)::int AS n FROM gone`;
    deleted += r!.n;
    if (r!.n < PRUNE_CHUNK_ROWS) return deleted;
  }
}
