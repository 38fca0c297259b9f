/**
 * LMDB environments moved aside after damage (integrity.ts): `<dir>.corrupt-<ISO timestamp>`
 * beside the live one. Moving aside keeps a damaged copy for inspection (and, for the capture
 * outbox, for recovery of its events: capture/outbox-recovery.ts); pruning keeps at most the
 * newest `keep` copies (config.keepMovedAside, SWITCHYARD_KEEP_MOVED_ASIDE) so a node that keeps
 * finding damage cannot fill its disk. A copy is deleted only when `finished(copy)` says nothing
 * more will be read from it.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Suffix between an environment's directory name and the timestamp of its move. */
export const ASIDE_SUFFIX = '.corrupt-';

/**
 * Renames the environment at `dir` to `<dir>.corrupt-<timestamp>` (a counter is added when that
 * name is taken). @returns the new path. @throws on IO errors.
 */
export function moveAside(dir: string): string {
  const base = `${dir}${ASIDE_SUFFIX}${new Date().toISOString().replace(/[:.]/g, '-')}`;
  let aside = base;
  for (let n = 1; fs.existsSync(aside); n++) aside = `${base}-${n}`;
  fs.renameSync(dir, aside);
  return aside;
}

/** The copies of `dir` moved aside, oldest first (the timestamp in the name sorts by time). */
export function listAside(dir: string): string[] {
  const parent = path.dirname(dir);
  const prefix = `${path.basename(dir)}${ASIDE_SUFFIX}`;
  let names: string[];
  try { names = fs.readdirSync(parent); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names.filter((n) => n.startsWith(prefix)).sort().map((n) => path.join(parent, n));
}

/**
 * Deletes the copies of `dir` moved aside beyond the newest `keep`, skipping any copy
 * `finished` rejects (still to be recovered). @returns the deleted paths. @throws on IO errors.
 */
export function pruneAside(dir: string, keep: number, finished: (copy: string) => boolean = () => true): string[] {
  const copies = listAside(dir);
  const old = copies.slice(0, Math.max(0, copies.length - keep));
  const deleted: string[] = [];
  for (const copy of old) {
    if (!finished(copy)) continue;
    fs.rmSync(copy, { recursive: true, force: true });
    deleted.push(copy);
  }
  return deleted;
}
