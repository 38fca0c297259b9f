/**
 * Is one of a node's LMDB environments (its store, its capture outbox) safe to open? (DESIGN.md "Evaluation node".) A damaged `data.mdb` does not raise an error in LMDB:
 * zeroed or overwritten meta pages crash the process with SIGSEGV and a truncated file with
 * SIGBUS, which no JavaScript can catch. So before the node opens an environment it checks it,
 * in two steps ({@link checkEnvironment}), and moves a bad one aside (aside.ts): the store is
 * rebuilt from a fresh snapshot (recover.ts), the outbox starts empty and the events of the old
 * one are recovered (capture/outbox-recovery.ts):
 *
 * 1. {@link checkLmdbHeader}, in process: the two meta pages (LMDB mdb.c `mdb_env_read_header`;
 *    lmdb-js builds LMDB's mdb.master3 branch, whose page header is 24 bytes): at least one
 *    must carry the P_META flag and magic 0xBEEFC0DE, and the newest valid one's last page must
 *    lie inside the file;
 * 2. {@link probeStore}, in a short-lived child process (probe.ts): opens the environment
 *    read-only and reads and decodes every key and value of every database. A crash or an
 *    error there costs the child, not the node. Skipped when the file is exactly as its
 *    writer's clean close left it (clean-close.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { moveAside } from './aside.js';
import { takeCleanClose } from './clean-close.js';

/** LMDB's meta-page magic number. */
export const LMDB_MAGIC = 0xbeefc0de;
/** P_META page flag. */
const P_META = 0x08;
/** Byte offsets inside a meta page (64-bit build, mdb.master3 page header of 24 bytes). */
const OFF = { flags: 18, magic: 24, pageSize: 48, lastPage: 144, txnId: 152 } as const;
/** Longest a probe may run before the store is treated as unusable, in ms. */
export const PROBE_TIMEOUT_MS = 120_000;

/**
 * Checks the meta pages of `<dir>/data.mdb`.
 * @returns null when the environment looks sound or does not exist yet, else the reason.
 */
export function checkLmdbHeader(dir: string): string | null {
  const file = path.join(dir, 'data.mdb');
  let fd: number;
  try { fd = fs.openSync(file, 'r'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return `cannot read ${file}: ${(e as Error).message}`;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return null; // created, never written: LMDB initialises it
    const meta = (offset: number): { pageSize: number; lastPage: number; txnId: bigint } | null => {
      const b = Buffer.alloc(OFF.txnId + 8);
      if (fs.readSync(fd, b, 0, b.length, offset) < b.length) return null;
      if ((b.readUInt16LE(OFF.flags) & P_META) === 0 || b.readUInt32LE(OFF.magic) !== LMDB_MAGIC) return null;
      const pageSize = b.readUInt32LE(OFF.pageSize);
      if (pageSize < 512 || pageSize > 65_536 || (pageSize & (pageSize - 1)) !== 0) return null;
      return { pageSize, lastPage: Number(b.readBigUInt64LE(OFF.lastPage)), txnId: b.readBigUInt64LE(OFF.txnId) };
    };
    const first = meta(0);
    const second = meta(first?.pageSize ?? 4096);
    if (!first && !second) return 'both LMDB meta pages are damaged (no P_META page with magic 0xBEEFC0DE)';
    const newest = !second || (first && first.txnId >= second.txnId) ? first! : second;
    const needed = (newest.lastPage + 1) * newest.pageSize;
    if (needed > size) return `data.mdb is truncated: ${size} bytes, its last page ends at ${needed}`;
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Opens the store at `dir` read-only in a child process and reads all of it (probe.ts).
 * @returns null when the child read everything, else the reason (exit code, signal, stderr).
 */
export function probeStore(dir: string, timeoutMs: number = PROBE_TIMEOUT_MS): Promise<string | null> {
  const script = fileURLToPath(new URL('./probe.js', import.meta.url));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => { if (stderr.length < 2_000) stderr += c.toString('utf8'); });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); resolve(`probe could not start: ${e.message}`); });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(null);
      else resolve(`reading the store ${signal ? `killed the probe (${signal})` : `failed (exit ${code})`}${stderr ? `: ${stderr.trim().split('\n')[0]}` : ''}`);
    });
  });
}

/**
 * Both checks of the environment at `dir` in order (the meta pages, then the child-process
 * read of everything, unless `probe` is false or the file is exactly as its writer's clean close
 * left it: clean-close.ts, whose record this takes). A missing `data.mdb` is sound (created on open).
 * @returns null when sound, else the reason.
 */
export async function checkEnvironment(dir: string, probe = true): Promise<string | null> {
  const closedCleanly = takeCleanClose(dir);
  if (!fs.existsSync(path.join(dir, 'data.mdb'))) return null;
  return checkLmdbHeader(dir) ?? (probe && !closedCleanly ? await probeStore(dir) : null);
}

/** Renames the store at `dir` aside (aside.ts {@link moveAside}). @returns the new path. @throws on IO errors. */
export const moveStoreAside = moveAside;
