/**
 * Where a test run keeps its files: the run's Postgres cluster, and every data dir, outbox and
 * snapshot image its files create (they make them under `os.tmpdir()`, which the runner points
 * here through TMPDIR).
 *
 * A memory file system (/dev/shm) when it is one and has room, else the OS's temporary directory.
 * The product calls fsync where its durability needs it (LMDB commits, the capture outbox); on a
 * disk each call waits for the device, about 14 s of a full run blocked in LMDB opens alone,
 * while no test loses power, so none needs its files on a device: a killed process leaves its
 * writes in the page cache either way. TEST_TMPDIR overrides the choice.
 */
import fs from 'node:fs';
import os from 'node:os';

/** Memory file systems tried first, in order. */
const MEMORY_DIRS = ['/dev/shm'];
/** Free space a memory file system must have, in bytes: the run's cluster grows to a few GiB. */
const MIN_FREE_BYTES = 8 * 1024 ** 3;
/** statfs(2) type of tmpfs. */
const TMPFS_MAGIC = 0x01021994;

/** The directory a run makes its scratch directory in (see the module's doc). */
export function scratchRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEST_TMPDIR) return env.TEST_TMPDIR;
  for (const dir of MEMORY_DIRS) {
    try {
      const s = fs.statfsSync(dir);
      if (s.type !== TMPFS_MAGIC || s.bavail * s.bsize < MIN_FREE_BYTES) continue;
      fs.accessSync(dir, fs.constants.W_OK);
      return dir;
    } catch { /* not there, or not writable */ }
  }
  return os.tmpdir();
}
