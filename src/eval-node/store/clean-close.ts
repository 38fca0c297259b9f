/**
 * A record, beside a node's LMDB environment (its store, its capture outbox), that the writer
 * closed it cleanly: `clean-close.json` holds `data.mdb`'s identity, size and modification time
 * as the close left them. The next open takes the record (reads and deletes it, so a crash in
 * that run leaves none) and, when the file is still exactly as closed, skips the child-process
 * read of every page (integrity.ts): a clean close cannot leave damage that read would find,
 * and a file written since (damage at rest, a copy put in its place) no longer matches. The
 * meta-page check still runs on every open. As databases trust a clean shutdown marker instead
 * of running crash recovery, this keeps a restart's cost independent of the store's size.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The record's file name inside the environment's directory. */
export const CLEAN_CLOSE_FILE = 'clean-close.json';

/**
 * Time the record waits past `data.mdb`'s last modification before it is written, in ms. File
 * times come from the kernel's coarse clock (one tick is 1–10 ms): a write in the same tick as
 * the close's last write would leave the modification time unchanged; once the clock has moved
 * on, any later write to the file changes it.
 */
const CLOCK_TICK_MS = 12;

/** What the record holds of `data.mdb`: numbers as decimal strings (nanoseconds are bigints). */
interface FileIdentity { dev: string; ino: string; size: string; mtimeNs: string }

function identity(file: string): FileIdentity | null {
  try {
    const s = fs.statSync(file, { bigint: true });
    return { dev: String(s.dev), ino: String(s.ino), size: String(s.size), mtimeNs: String(s.mtimeNs) };
  } catch {
    return null;
  }
}

/**
 * Records that the environment at `dir` was just closed cleanly by its writer (call after the
 * close has returned). Does nothing when there is no `data.mdb`; failing to write the record
 * only costs the next open its probe, so IO errors are swallowed.
 */
export async function markCleanClose(dir: string): Promise<void> {
  const file = path.join(dir, 'data.mdb');
  const id = identity(file);
  if (id === null) return;
  const sinceWriteMs = Date.now() - Number(BigInt(id.mtimeNs) / 1_000_000n);
  if (sinceWriteMs < CLOCK_TICK_MS) await new Promise((r) => setTimeout(r, CLOCK_TICK_MS - Math.max(0, sinceWriteMs)));
  try {
    fs.writeFileSync(path.join(dir, CLEAN_CLOSE_FILE), JSON.stringify(id), { mode: 0o600 });
  } catch { /* the next open probes */ }
}

/**
 * Takes the clean-close record of the environment at `dir`: deletes it and tells whether
 * `data.mdb` is still the file, of the size and modification time, that the clean close left.
 * False when there is no record, it does not parse, or anything differs.
 */
export function takeCleanClose(dir: string): boolean {
  const marker = path.join(dir, CLEAN_CLOSE_FILE);
  let text: string;
  try { text = fs.readFileSync(marker, 'utf8'); } catch { return false; }
  try { fs.rmSync(marker, { force: true }); } catch { return false; } // kept, it could vouch for a later crash
  let recorded: Partial<FileIdentity>;
  try { recorded = JSON.parse(text) as Partial<FileIdentity>; } catch { return false; }
  const now = identity(path.join(dir, 'data.mdb'));
  return now !== null && now.dev === recorded.dev && now.ino === recorded.ino && now.size === recorded.size && now.mtimeNs === recorded.mtimeNs;
}
