/**
 * Appends entity changes to `change_log` inside the writer's transaction and wakes the gRPC
 * Watch streams of every control-plane replica (DESIGN.md "Control plane").
 *
 * Ordering invariant: revisions come from a sequence, which hands out numbers at insert time,
 * not at commit time. To make revisions *visible* in increasing order — so that a reader
 * tailing `revision > n` never skips one that commits late — every appender first takes the
 * transaction-scoped advisory lock {@link CHANGE_LOG_LOCK_KEY}. It is held until commit, so
 * the next appender draws a higher number and commits after. Append as the LAST statement of
 * a transaction to keep the serialised section short.
 *
 * `pg_notify` issued inside the transaction is delivered only on commit (Postgres semantics),
 * so listeners are woken exactly when the rows become visible.
 */
import type { Tx, Sql } from '../db/connect.js';
import type { EntityKind } from './entities.js';

/** Advisory lock key that serialises change-log appends (arbitrary constant). */
export const CHANGE_LOG_LOCK_KEY = 7_302_114_002;
/** LISTEN/NOTIFY channel; the payload is the highest revision appended. */
export const CHANGE_LOG_CHANNEL = 'switchyard_change_log';

/** One change: the entity's new state (`upsert`) or its removal (`delete`, payload null). */
export interface ChangeInput {
  projectId: number | null;
  kind: EntityKind;
  entityId: string;
  op: 'upsert' | 'delete';
  payload: unknown;
}

/** A stored change. */
export interface ChangeRow {
  revision: number;
  project_id: number | null;
  kind: EntityKind;
  entity_id: string;
  op: 'upsert' | 'delete';
  payload: unknown;
  created_at: Date;
}

/**
 * Appends `changes` in order inside `tx` and schedules the NOTIFY; returns their revisions.
 * Must be called inside `sql.begin` (a transaction), as its last writes.
 */
export async function appendChanges(tx: Tx, changes: readonly ChangeInput[]): Promise<number[]> {
  if (changes.length === 0) return [];
  await tx`SELECT pg_advisory_xact_lock(${CHANGE_LOG_LOCK_KEY})`;
  const revisions: number[] = [];
  for (const c of changes) {
    const [row] = await tx<{ revision: number }[]>`
      INSERT INTO change_log (project_id, kind, entity_id, op, payload)
      VALUES (${c.projectId}, ${c.kind}, ${c.entityId}, ${c.op}, ${c.payload === null ? null : tx.json(c.payload as never)})
      RETURNING revision`;
    revisions.push(row!.revision);
  }
  await tx`SELECT pg_notify(${CHANGE_LOG_CHANNEL}, ${String(revisions[revisions.length - 1])})`;
  return revisions;
}

/** Reads up to `limit` changes with revision > `afterRevision`, in revision order. */
export async function readChangesAfter(sql: Sql, afterRevision: number, limit: number): Promise<ChangeRow[]> {
  return sql<ChangeRow[]>`
    SELECT revision, project_id, kind, entity_id, op, payload, created_at
    FROM change_log WHERE revision > ${afterRevision} ORDER BY revision LIMIT ${limit}`;
}

/** Highest committed revision (0 on an empty log). */
export async function currentRevision(sql: Sql): Promise<number> {
  const [row] = await sql<{ r: number | null }[]>`SELECT max(revision) AS r FROM change_log`;
  return row?.r ?? 0;
}
