/**
 * Child process reading the events of a capture outbox moved aside after damage
 * (outbox-recovery.ts): `fork(outbox-salvage.js, [<data.mdb>], { serialization: 'advanced' })`.
 * It scans the file without LMDB (store/salvage.ts), keeps each record whose value is an outbox
 * entry (a msgpack array of events, each an object with a string uuid: outbox.ts), drops exact
 * repeats (the same record on an old copy of a page), and sends them to the parent:
 *
 * - `{ type: 'entries', entries: Uint8Array[] }`, up to {@link BATCH_BYTES} of payload, then
 *   waits for the parent's `'more'` before reading on (the parent appends them to the live
 *   outbox first, so memory stays bounded whatever the file's size);
 * - `{ type: 'done', counts }` at the end ({@link SalvageReport}).
 *
 * Exits 0 after `done`, 2 on an error (message on stderr). Running apart means that even a bug
 * in the reader costs this process, not the node.
 */
import crypto from 'node:crypto';
import { Packr } from 'msgpackr';
import { salvageRecords, type SalvageCounts } from '../store/salvage.js';

/** Largest payload of one `entries` message, in bytes. */
export const BATCH_BYTES = 1024 * 1024;

/** The final counts of one salvage. */
export interface SalvageReport extends SalvageCounts {
  /** Outbox entries (requests) sent to the parent. */
  entries: number;
  /** Events in them. */
  events: number;
  /** Repeats of an entry already sent (old page copies), not sent again. */
  repeats: number;
}

/** Messages from the child to the parent. */
export type SalvageMessage = { type: 'entries'; entries: Uint8Array[] } | { type: 'done'; counts: SalvageReport };

const plain = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** Number of events when `value` is an outbox entry, else null. */
function outboxEvents(value: Buffer): number | null {
  let decoded: unknown;
  try { decoded = plain.unpack(value); } catch { return null; }
  if (!Array.isArray(decoded) || decoded.length === 0) return null;
  for (const e of decoded) if (typeof e !== 'object' || e === null || typeof (e as { uuid?: unknown }).uuid !== 'string') return null;
  return decoded.length;
}

function send(message: SalvageMessage): Promise<void> {
  return new Promise((resolve, reject) => process.send!(message, (e: Error | null) => (e ? reject(e) : resolve())));
}

function more(): Promise<void> {
  return new Promise((resolve) => process.once('message', () => resolve()));
}

async function main(file: string): Promise<void> {
  const counts: SalvageReport = { pages: 0, unreadablePages: 0, unrecognisedPages: 0, unreadableRecords: 0, entries: 0, events: 0, repeats: 0 };
  const seen = new Set<string>();
  let batch: Uint8Array[] = [];
  let bytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const acked = more();
    await send({ type: 'entries', entries: batch });
    batch = [];
    bytes = 0;
    await acked;
  };
  for (const { key, value } of salvageRecords(file, counts)) {
    const events = outboxEvents(value);
    if (events === null) { counts.unreadableRecords++; continue; }
    const digest = crypto.createHash('sha256').update(key).update(value).digest('base64');
    if (seen.has(digest)) { counts.repeats++; continue; }
    seen.add(digest);
    counts.entries++;
    counts.events += events;
    batch.push(value);
    bytes += value.length;
    if (bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  await send({ type: 'done', counts });
}

const file = process.argv[2];
if (!file || typeof process.send !== 'function') {
  process.stderr.write('usage: fork outbox-salvage.js <data.mdb> with an IPC channel\n');
  process.exit(2);
}
main(file).then(() => process.exit(0), (e: Error) => {
  process.stderr.write(`${e.message}\n`);
  process.exit(2);
});
