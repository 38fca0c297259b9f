/**
 * Per-project serialisation of person/group writes. Ingestion reads a person, decides, then
 * writes (create on first sight, merge on `$identify`), so two transactions working on the same
 * project at once could create a distinct id twice or merge from stale state. Every writer of
 * persons, distinct ids, groups or hash-key overrides therefore takes a transaction-scoped
 * advisory lock per project first, in ascending project order (no deadlocks between batches
 * spanning several projects). Cost: batches of one project commit one after another, which
 * the change-log append lock (change-log/store.ts) largely imposes anyway.
 */
import type { Tx } from '../db/connect.js';

/** First key of the two-key advisory lock space used for ingestion (arbitrary constant). */
export const INGEST_LOCK_CLASS = 73_021_140;

/** Takes the ingestion lock of each project (sorted, deduplicated); held until commit. */
export async function lockProjects(tx: Tx, projectIds: Iterable<number>): Promise<void> {
  const ids = [...new Set(projectIds)].sort((a, b) => a - b);
  for (const id of ids) {
    // Two-int form: project ids fit int4 in practice; `% 2^31` keeps larger ones valid (a
    // collision would only serialise two projects, never break correctness).
    await tx`SELECT pg_advisory_xact_lock(${INGEST_LOCK_CLASS}::int, ${id % 2_147_483_648}::int)`;
  }
}
