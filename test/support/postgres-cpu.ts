/**
 * CPU time of the run's embedded Postgres (test/run.ts prints it in the summary): the
 * postmaster's own, its finished backends' (reaped into its child CPU) and the live ones', read
 * from /proc (Linux). Null where /proc or the pid file cannot be read.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Clock ticks per second of /proc/<pid>/stat's CPU fields (USER_HZ; 100 on Linux). */
const TICKS_PER_S = 100;

/** utime, stime, cutime, cstime and the parent pid of `pid` (null once it is gone). */
function stat(pid: string): { ppid: string; self: number; children: number } | null {
  let text: string;
  try { text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { return null; }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' '); // fields from the state on (field 3)
  return { ppid: f[1]!, self: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]) };
}

/** CPU milliseconds used so far by the cluster whose data directory is `dataDir`. */
export function postgresCpuMs(dataDir: string): number | null {
  let pid: string;
  try { pid = fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]!.trim(); } catch { return null; }
  const main = stat(pid);
  if (main === null) return null;
  let ticks = main.self + main.children;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(entry);
    if (s !== null && s.ppid === pid) ticks += s.self;
  }
  return (ticks / TICKS_PER_S) * 1000;
}
