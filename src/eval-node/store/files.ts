/**
 * Permissions of a node's LMDB environments: LMDB creates its files 0664
 * minus the umask (0644 by default), readable by every local user, and the store holds
 * persons' properties and key hashes. Directories are made 0700 and files 0600, on every
 * open (an existing store is tightened too).
 */
import fs from 'node:fs';
import path from 'node:path';

/** Mode of an LMDB environment directory. */
export const LMDB_DIR_MODE = 0o700;
/** Mode of `data.mdb` and `lock.mdb`. */
export const LMDB_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) and sets it to {@link LMDB_DIR_MODE}. @throws on IO errors. */
export function prepareLmdbDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: LMDB_DIR_MODE });
  fs.chmodSync(dir, LMDB_DIR_MODE);
}

/** Sets the environment's files in `dir` to {@link LMDB_FILE_MODE} (missing files are skipped). */
export function restrictLmdbFiles(dir: string): void {
  for (const name of ['data.mdb', 'lock.mdb']) {
    try { fs.chmodSync(path.join(dir, name), LMDB_FILE_MODE); } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}
