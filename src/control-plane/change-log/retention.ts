/**
 * Change-log retention. The log grows with every definition change and, since capture, every
 * person, group and override change, so old revisions must go. A revision is deleted only when
 * it is BOTH more than `keepRevisions` behind the head AND older than `keepMs`: a node that was
 * away for less than either bound resumes from the tail; one further behind gets a snapshot
 * (control-plane/grpc/watch.ts treats `min(revision) > from + 1` as `log_pruned`).
 *
 * Deletes run in chunks of {@link PRUNE_CHUNK_ROWS} rows, each its own short statement, so a
 * large backlog never holds long locks or a long transaction. Safe on any number of replicas
 * at once (concurrent deletes of the same rows just find nothing).
 */
import type { Sql } from '../db/connect.js';

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
    const rows = await sql`
      DELETE FROM change_log WHERE revision IN (
        SELECT revision FROM change_log WHERE revision <= ${cutoff} AND created_at < ${before}
        ORDER BY revision LIMIT ${PRUNE_CHUNK_ROWS})
      RETURNING revision`;
    deleted += rows.length;
    if (rows.length < PRUNE_CHUNK_ROWS) return deleted;
  }
}
