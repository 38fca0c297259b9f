/**
 * The pages of the node's LMDB files mapped into this process (honest memory).
 *
 * LMDB reads through one shared, read-only file mapping. Every page a read or a B-tree descent
 * touches stays mapped, and counts in the process' RSS, until the mapping goes: after a bulk
 * load the node showed ~730 MB of file-backed RSS for a working set that a restarted node
 * holds in ~50 MB (each page fault also maps up to 15 neighbouring cached pages: the kernel's
 * fault-around). lmdb-js has no call to let those pages go, and remapping would mean closing
 * the environment under every thread that reads it.
 *
 * {@link releaseMappedPages} asks the kernel to drop this process' page-table entries for those
 * mappings: `madvise(MADV_DONTNEED)` (memory/libc.ts). On a shared file mapping that
 * loses nothing: the pages stay in the OS page cache (dirty ones are written back as usual), and
 * the next read maps them again (a minor fault). Linux only; elsewhere, or when the FFI cannot
 * load, it does nothing and says so.
 *
 * {@link mappedResidentBytes} reads how much of those mappings is resident (`/proc/self/smaps`),
 * for `/metrics`.
 */
import fs from 'node:fs';
import { loadLibc, MADV_DONTNEED } from './libc.js';

/** A mapping of one of `files` in this process: its address range. */
interface Mapping { start: bigint; end: bigint; file: string }

/** `file` with symbolic links resolved, as /proc/self/maps names it (itself when it does not exist). */
function realPath(file: string): string {
  try { return fs.realpathSync(file); } catch { return file; }
}

/**
 * A mapping's header line of /proc/self/maps or /proc/self/smaps ("start-end perms offset dev
 * inode   path"), or null for any other line; `path` is null for anonymous mappings.
 */
function mappingLine(line: string): { start: bigint; end: bigint; path: string | null } | null {
  // Anonymous mappings end after the inode, some with trailing blanks.
  const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
  return m ? { start: BigInt(`0x${m[1]}`), end: BigInt(`0x${m[2]}`), path: m[3] || null } : null;
}

/** The mappings of `files` (absolute paths) listed in /proc/self/maps. */
function mappingsOf(files: readonly string[]): Mapping[] {
  let text: string;
  try { text = fs.readFileSync('/proc/self/maps', 'utf8'); } catch { return []; }
  const wanted = new Set(files.map(realPath));
  const out: Mapping[] = [];
  for (const line of text.split('\n')) {
    const m = mappingLine(line);
    if (m?.path && wanted.has(m.path)) out.push({ start: m.start, end: m.end, file: m.path });
  }
  return out;
}

/** Outcome of {@link releaseMappedPages}. */
export interface ReleaseResult {
  /** False when madvise is unavailable (not Linux, or the FFI failed to load): nothing was done. */
  supported: boolean;
  /** Mappings advised. */
  mappings: number;
  /** Address-range bytes advised (not all of it was resident). */
  bytes: number;
}

/**
 * Drops this process' page-table entries for every mapping of `files` (absolute paths, e.g.
 * `<dir>/data.mdb`) with `madvise(MADV_DONTNEED)`: resident file-backed memory falls to what is
 * read afterwards. Safe while other threads read the mappings (they fault the pages back in).
 * Never throws: a failing call is skipped.
 */
export function releaseMappedPages(files: readonly string[]): ReleaseResult {
  const libc = loadLibc();
  if (!libc) return { supported: false, mappings: 0, bytes: 0 };
  smaps = null;
  let mappings = 0;
  let bytes = 0;
  for (const m of mappingsOf(files)) {
    const length = Number(m.end - m.start);
    try {
      if (libc.madvise(m.start, length, MADV_DONTNEED) === 0) { mappings++; bytes += length; }
    } catch { /* skipped */ }
  }
  return { supported: true, mappings, bytes };
}

let smaps: { at: number; text: string | null } | null = null;

/** /proc/self/smaps, or the last read when younger than `maxAgeMs`; null when unreadable. */
function smapsText(maxAgeMs: number): string | null {
  const now = Date.now();
  if (smaps && now - smaps.at < maxAgeMs) return smaps.text;
  let text: string | null;
  try { text = fs.readFileSync('/proc/self/smaps', 'utf8'); } catch { text = null; }
  smaps = { at: now, text };
  return text;
}

/**
 * Resident bytes of this process' mappings of `files` (the `Rss:` lines of /proc/self/smaps),
 * by file; 0 for a file not mapped, and for every file where smaps cannot be read. `maxAgeMs` > 0
 * lets a read of smaps (~0.3 MB of text) younger than that answer again (a /metrics scrape asks
 * once per environment); a release always makes the next call read afresh.
 */
export function mappedResidentBytes(files: readonly string[], maxAgeMs = 0): Map<string, number> {
  const out = new Map(files.map((f) => [f, 0]));
  const byReal = new Map(files.map((f) => [realPath(f), f]));
  const text = smapsText(maxAgeMs);
  if (text === null) return out;
  let current: string | null = null;
  for (const line of text.split('\n')) {
    const m = mappingLine(line);
    if (m) {
      current = m.path === null ? null : byReal.get(m.path) ?? null;
      continue;
    }
    if (current !== null && line.startsWith('Rss:')) out.set(current, out.get(current)! + Number(/(\d+)/.exec(line)![1]) * 1024);
  }
  return out;
}
