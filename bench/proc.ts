/**
 * Processes the benches start and measure: CPU time read from /proc (all threads of a process),
 * spawning a server and waiting until it answers, and polling a readiness URL.
 */
import fs from 'node:fs';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';

/** Clock ticks per second of /proc/<pid>/stat times. */
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU time (user + system, µs) of process `pid`, all its threads, from /proc. @throws when the process is gone. */
export function processCpuUs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6; // utime, stime (fields 14, 15)
}

/**
 * CPU time (µs) of process `pid` and its children: its own, its exited children's (reaped:
 * cutime + cstime) and its live children's, from /proc. For a Postgres postmaster this is the
 * server's whole CPU (every backend and background process is its child).
 * @throws when the process is gone.
 */
export function processTreeCpuUs(pid: number): number {
  const ticks = (stat: string) => stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = ticks(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  let total = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]); // utime, stime, cutime, cstime
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let f: string[];
    try { f = ticks(fs.readFileSync(`/proc/${entry}/stat`, 'utf8')); } catch { continue; } // exited meanwhile
    if (Number(f[1]) === pid) total += Number(f[11]) + Number(f[12]); // ppid (field 4)
  }
  return (total / CLK_TCK) * 1e6;
}

/** Spawns `args` and resolves once `ready()` says so (bounded); the child is killed on failure. */
export async function spawnServer(args: string[], env: Record<string, string>, ready: () => Promise<boolean>): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  const until = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    if (await ready().catch(() => false)) return child;
    if (Date.now() > until) { child.kill('SIGKILL'); throw new Error(`${args.join(' ')} not ready`); }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `url` until it answers 200 (bounded). */
export async function waitReady(url: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    if (Date.now() > until) throw new Error(`${url} not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
