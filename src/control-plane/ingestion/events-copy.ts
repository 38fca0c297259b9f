/**
 * The events of a batch written with `COPY events (…) FROM STDIN` (ingestion stage 6, service.ts):
 * Postgres' cheapest way in, about half the CPU of `INSERT … SELECT FROM json_to_recordset … ON
 * CONFLICT DO NOTHING` per event (docs/benchmarks.md "Persons and plain events through capture").
 *
 * COPY has no conflict clause: a row whose key (project_id, uuid, timestamp) is stored fails the
 * whole statement. That cannot happen here because every writer of `events` is ingestion
 * (service.ts, the only `INSERT`/`COPY` into the table outside tests and benches), which takes its
 * projects' ingestion locks (locks.ts) before it drops the events already stored (dedupe.ts
 * `storedEvents`) and the repeats within the batch: no other transaction can store one of these
 * keys between that check and this COPY. Should it ever happen, the COPY fails, the batch is
 * rerun on the statement path (service.ts) and nothing is stored twice.
 *
 * The month partitions must exist (ensureEventPartitions runs before the transaction): COPY into
 * the partitioned parent routes each row to its partition.
 */
import type { Tx } from '../db/connect.js';
import type { IngestEvent } from '../../contract/events.js';

/** Thrown when a COPY failed in Postgres: the transaction is aborted and the real error is not reported (module doc of {@link copyInto}). */
export class CopyFailed extends Error {}

const SPECIAL = /[\\\n\r\t]/;

/**
 * `s` as a field of COPY's text format: backslash, newline, carriage return and tab escaped
 * (PostgreSQL manual, COPY "Text Format"); `\N` therefore stays text, never NULL.
 */
export function copyText(s: string): string {
  if (!SPECIAL.test(s)) return s;
  return s.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'));
}

/** A JSON value as a COPY text field: JSON text escapes every control character itself, so only backslashes need doubling. */
export function copyJson(v: unknown): string {
  const s = JSON.stringify(v);
  return s.includes('\\') ? s.replace(/\\/g, '\\\\') : s;
}

/** The COPY text lines of `events` (personIds[i] is events[i]'s person uuid or null). */
export function eventCopyLines(events: readonly IngestEvent[], personIds: readonly (string | null)[]): string {
  let out = '';
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const pid = personIds[i];
    out += `${e.projectId}\t${e.uuid}\t${copyText(e.event)}\t${copyText(e.distinctId)}\t${pid ?? '\\N'}\t${copyJson(e.properties)}\t${e.timestamp.toISOString()}\n`;
  }
  return out;
}

/**
 * Sends `text` (COPY text-format lines) to `copy` (a `COPY … FROM STDIN` statement) in `tx`.
 * Resolves once the data and the end of the COPY are sent; the COPY's outcome is that of the
 * next statement of `tx`, which {@link afterCopy} wraps. postgres.js (3.4) settles a COPY stream
 * only on success: a server error after the end leaves it unfinished, so awaiting its finish
 * could hang, and the error itself surfaces as 25P02 (transaction aborted) on the next statement.
 * @throws the stream's error when the COPY failed before its end was sent.
 */
export async function copyInto(tx: Tx, copy: string, text: string): Promise<void> {
  const w = await tx.unsafe(copy).writable();
  w.on('error', () => {}); // reported through the write callback or the next statement
  await new Promise<void>((resolve, reject) => w.write(text, (e) => (e ? reject(e) : resolve())));
  // With nothing buffered, end() runs the stream's final step at once (Node ≥ 15), which sends
  // CopyDone and frees the connection for the next statement.
  w.end();
}

/**
 * Runs `next` (the statement after a COPY in the same transaction) and turns "transaction
 * aborted" into {@link CopyFailed}: the COPY itself was refused (see {@link copyInto}).
 */
export async function afterCopy<T>(next: () => Promise<T>): Promise<T> {
  try {
    return await next();
  } catch (err) {
    if ((err as { code?: unknown }).code === '25P02') throw new CopyFailed('COPY into events failed in Postgres');
    throw err;
  }
}

/** COPYs `events` (deduplicated under the ingestion lock: module doc) into `events`. */
export async function copyEvents(tx: Tx, events: readonly IngestEvent[], personIds: readonly (string | null)[]): Promise<void> {
  await copyInto(tx, 'COPY events (project_id, uuid, event, distinct_id, person_id, properties, timestamp) FROM STDIN',
    eventCopyLines(events, personIds));
}
