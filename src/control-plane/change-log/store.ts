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
import type { EntityKind } from '../../contract/entities.js';

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
  /** Size of the payload as JSON text, in bytes (0 for deletes): what bounds reads and windows. */
  bytes: number;
}

/**
 * Appends `changes` in order inside `tx` and schedules the NOTIFY; returns their revisions
 * (contiguous and increasing in input order). Must be called inside `sql.begin` (a transaction),
 * as its last writes. Cost: one statement for one change; for many (ingestion batches), one
 * sequence call plus one multi-row insert.
 */
export async function appendChanges(tx: Tx, changes: readonly ChangeInput[]): Promise<number[]> {
  if (changes.length === 0) return [];
  await tx`SELECT pg_advisory_xact_lock(${CHANGE_LOG_LOCK_KEY})`;
  let revisions: number[];
  if (changes.length === 1) {
    const c = changes[0]!;
    const [row] = await tx<{ revision: number }[]>`
      INSERT INTO change_log (project_id, kind, entity_id, op, payload)
      VALUES (${c.projectId}, ${c.kind}, ${c.entityId}, ${c.op}, ${c.payload === null ? null : tx.json(c.payload as never)})
      RETURNING revision`;
    revisions = [row!.revision];
  } else {
    // Many changes (an ingestion batch): reserve a contiguous block of revisions, then one
    // multi-row insert with explicit revisions, so entry i gets first + i whatever order the
    // executor inserts rows in. Safe because every appender holds the lock taken above.
    const n = changes.length;
    const [block] = await tx<{ last: number }[]>`
      SELECT setval(pg_get_serial_sequence('change_log', 'revision'),
        nextval(pg_get_serial_sequence('change_log', 'revision')) + ${n - 1}) AS last`;
    const first = block!.last - n + 1;
    revisions = changes.map((_, i) => first + i);
    await tx`
      INSERT INTO change_log (revision, project_id, kind, entity_id, op, payload)
      SELECT r, p, k, e, o, pl
      FROM json_to_recordset(${JSON.stringify(changes.map((c, i) => ({
        r: revisions[i], p: c.projectId, k: c.kind, e: c.entityId, o: c.op, pl: c.payload,
      })))}::text::json) AS v(r bigint, p bigint, k text, e text, o text, pl jsonb)`;
  }
  await tx`SELECT pg_notify(${CHANGE_LOG_CHANNEL}, ${String(revisions[revisions.length - 1])})`;
  return revisions;
}

/**
 * Most payload bytes one read returns (1,000 rows of ~1 MB persons each held a
 * gigabyte per reader). A read always returns at least one row, whatever its size.
 */
export const READ_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Reads changes with revision > `afterRevision`, in revision order: at most `limit` rows, and
 * no more rows once {@link READ_MAX_BYTES} (or `maxBytes`) of payload JSON text is reached.
 */
export async function readChangesAfter(sql: Sql, afterRevision: number, limit: number, maxBytes: number = READ_MAX_BYTES): Promise<ChangeRow[]> {
  return sql<ChangeRow[]>`
    SELECT revision, project_id, kind, entity_id, op, payload, created_at, bytes FROM (
      SELECT c.*, sum(c.bytes) OVER (ORDER BY c.revision) - c.bytes AS before FROM (
        SELECT revision, project_id, kind, entity_id, op, payload, created_at,
          coalesce(octet_length(payload::text), 0)::int AS bytes
        FROM change_log WHERE revision > ${afterRevision} ORDER BY revision LIMIT ${limit}) c) w
    WHERE before < ${maxBytes} ORDER BY revision`;
}

/** Highest committed revision (0 on an empty log). */
export async function currentRevision(sql: Sql): Promise<number> {
  const [row] = await sql<{ r: number | null }[]>`SELECT max(revision) AS r FROM change_log`;
  return row?.r ?? 0;
}
