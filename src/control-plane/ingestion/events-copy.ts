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
import type { PendingQuery } from 'postgres';
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

/** The COPY text lines of `events` (personIds[i] is events[i]'s person uuid or null, isos[i] its timestamp's ISO text). */
export function eventCopyLines(events: readonly IngestEvent[], personIds: readonly (string | null)[], isos: readonly string[]): string {
  let out = '';
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    out += `${e.projectId}\t${e.uuid}\t${copyText(e.event)}\t${copyText(e.distinctId)}\t${personIds[i] ?? '\\N'}\t${copyJson(e.properties)}\t${isos[i]}\n`;
  }
  return out;
}

/**
 * The COPYs of one transaction, one after another. postgres.js (3.4) settles a COPY stream only on
 * success: a server error after the end of the data leaves the stream unfinished (awaiting it could
 * hang) and surfaces as 25P02 (transaction aborted) on the transaction's next statement; and a
 * finished stream, when it is destroyed, sends a CopyFail that would abort a COPY started on the
 * connection meanwhile. So each COPY is followed, before the next COPY and before the transaction
 * ends, by {@link settle}: one `SELECT 1` that reports the COPY's outcome, then the stream's close.
 */
export class CopySession {
  private open: NodeJS.WritableStream & { closed?: boolean; once(ev: 'close', f: () => void): unknown } | null = null;

  constructor(private readonly tx: Tx) {}

  /**
   * Sends `text` (COPY text-format lines) to `copy` (a `COPY … FROM STDIN` statement); resolves
   * once the data and the end are sent. The caller must {@link settle} before the transaction ends.
   * @throws CopyFailed when a previous COPY failed; the driver's error when this one failed early.
   */
  async copy(copy: string, text: string): Promise<void> {
    await this.settle();
    const w = await this.tx.unsafe(copy).writable();
    w.on('error', () => {}); // reported through the write callback or by settle()
    this.open = w;
    await new Promise<void>((resolve, reject) => w.write(text, (e) => (e ? reject(e) : resolve())));
    // With nothing buffered, end() runs the stream's final step at once (Node ≥ 15): CopyDone is
    // sent and the connection takes the next statement.
    w.end();
  }

  /**
   * Confirms the last COPY, if any, with `next` (one statement of the transaction, which runs in
   * any case) or else `SELECT 1`: resolves when the COPY is stored in the transaction and `next`
   * has run.
   * @throws CopyFailed when Postgres refused the COPY (the transaction is aborted).
   */
  async settle(next?: PendingQuery<never[]>): Promise<void> {
    const w = this.open;
    if (!w) { if (next) await next; return; }
    this.open = null;
    try {
      await (next ?? this.tx`SELECT 1`);
    } catch (err) {
      if ((err as { code?: unknown }).code === '25P02') throw new CopyFailed('a COPY failed in Postgres');
      throw err;
    }
    if (!w.closed) await new Promise<void>((resolve) => w.once('close', resolve));
  }
}

/** COPYs `events` (deduplicated under the ingestion lock: module doc) into `events`. */
export async function copyEvents(copies: CopySession, events: readonly IngestEvent[], personIds: readonly (string | null)[],
  isos: readonly string[]): Promise<void> {
  await copies.copy('COPY events (project_id, uuid, event, distinct_id, person_id, properties, timestamp) FROM STDIN',
    eventCopyLines(events, personIds, isos));
}
