/**
 * Dead letters: a captured event that can never be ingested (nested too deep,
 * an id too long to index, content Postgres refuses) is kept in `dead_letter_events`
 * (migration 0005) with the reason, instead of failing its batch forever and wedging the
 * node's outbox behind it. The payload keeps the event as it arrived, so it can be inspected
 * or replayed; the other columns are clipped, storable copies for finding it.
 */
import { Packr } from 'msgpackr';
import type { Sql, Tx } from '../db/connect.js';
import { cleanText, isObject } from '../../contract/events.js';

/** One event set aside. */
export interface DeadLetter {
  projectId: number | null;
  uuid: string | null;
  event: string | null;
  distinctId: string | null;
  /** The event's bytes (msgpack) as received, or re-encoded when only the value is at hand. */
  payload: Buffer;
  /** Why it cannot be ingested. */
  reason: string;
}

/** Longest text kept in the finding columns and the reason, in characters. */
const COLUMN_CHARS = 200;
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

function column(v: unknown): string | null {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v !== 'string') return null;
  const c = cleanText(v);
  return c.length <= COLUMN_CHARS ? c : c.slice(0, COLUMN_CHARS);
}

/**
 * The dead letter of `raw` (a decoded event, or undefined when it could not be decoded) for
 * `reason`; `bytes` are its original bytes when known (else `raw` is re-encoded; a value even
 * the encoder refuses is kept as its reason).
 */
export function deadLetterOf(raw: unknown, reason: string, bytes?: Uint8Array): DeadLetter {
  const o = isObject(raw) ? raw : {};
  let payload: Buffer;
  if (bytes) payload = Buffer.from(bytes);
  else {
    try { payload = packr.pack(raw); } catch { payload = Buffer.from(`unencodable: ${reason}`, 'utf8'); }
  }
  const pid = o.project_id;
  return {
    projectId: typeof pid === 'number' && Number.isSafeInteger(pid) ? pid : null,
    uuid: column(o.uuid), event: column(o.event), distinctId: column(o.distinct_id),
    payload, reason: cleanText(reason).slice(0, 1_000),
  };
}

/**
 * Inserts `letters`, one statement each (dead letters are rare). Runs in `tx` when given one
 * (the batch's transaction), so they commit with the rest of the batch.
 */
export async function writeDeadLetters(sql: Sql | Tx, letters: readonly DeadLetter[]): Promise<void> {
  for (const l of letters) {
    await sql`INSERT INTO dead_letter_events (project_id, uuid, event, distinct_id, payload, reason)
      VALUES (${l.projectId}, ${l.uuid}, ${l.event}, ${l.distinctId}, ${l.payload}, ${l.reason})`;
  }
}
