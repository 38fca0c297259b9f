/**
 * Runs test files for test/run.ts on a few long-lived worker processes (batch-entry.ts), at most
 * `concurrency` at a time. The files wait in one queue, longest expected first
 * (test/support/order.ts); a worker takes the next one when its last one has ended, so the lanes end
 * together whatever the estimates' errors, and each worker loads the product's modules once and
 * runs all its files with a warm JIT (every further process would pay about 1.5 CPU-s again for
 * loading and warming up). A worker runs its files one after another, so a file that starts
 * child processes or a browser, kills processes or measures latency has the process to itself
 * while it runs; its `after` hooks must stop what it started, and it must not change
 * process-wide state (environment, signal handlers).
 *
 * A worker runs in its own process group: when it ends, anything its files left running (a spawned
 * node, a browser) is killed; when one file passes `fileTimeoutMs`, the whole group is killed, the
 * file fails naming the test it was in, and a new worker takes the rest of the queue. Output is
 * handed over file by file as each file's suite ends, so workers running side by side do not
 * interleave their lines.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { REPORT_FILE_ENV, type FileCounts, type ReportRecord } from './reporter.js';
import { childrenCpuMs } from './child-cpu.js';
import type { FileTiming } from './batch-entry.js';

/** Finished children's CPU at the last worker's exit (child-cpu.ts). */
let lastChildrenCpuMs: number | null = childrenCpuMs();

/** How one worker process (or a file run alone) ended. */
export interface FileRun {
  /** Its first file. */
  file: string;
  /** Every file it was handed, in order (the last one unfinished when it was killed or crashed). */
  files: string[];
  /** A worker's per-file wall and CPU as its files ended (names relative to dist/test); empty for a file run alone. */
  timings: FileTiming[];
  /** Wall time from spawn to exit, in milliseconds. */
  durationMs: number;
  /** CPU time of its process and the children it waited for, in milliseconds (null where unknown; child-cpu.ts). */
  cpuMs: number | null;
  /** The process's exit code (null when killed by a signal). */
  exitCode: number | null;
  /** True when it was killed for passing `fileTimeoutMs`. */
  timedOut: boolean;
  /** What it wrote (spec reporter and stderr) that was not handed over with a file's output. */
  output: string;
  /** Its counts over the tests it finished (null when it finished none). */
  counts: FileCounts | null;
  /** Where a killed file was: `in "<test>"`, or after which test, or `loading the file`. */
  stuckAt: string | null;
}

export interface ScheduleOptions {
  concurrency: number;
  env: NodeJS.ProcessEnv;
  /** Wall time after which a whole file is killed, in milliseconds. */
  fileTimeoutMs: number;
  /** Directory for the reporters' count files. */
  scratchDir: string;
  /** Called as each worker ends (`run.output`: what it wrote after its last file's output). */
  onDone(run: FileRun): void;
  /** Called with each file's output (name relative to dist/test) as its suite ends; `ok`: it passed. */
  onFile?(name: string, output: string, ok: boolean): void;
}

/** The compiled counts reporter (this file is dist/test/support/schedule.js). */
const reporterPath = new URL('./reporter.js', import.meta.url).pathname;
/** The compiled batch entry. */
const batchEntryPath = new URL('./batch-entry.js', import.meta.url).pathname;

/** How long to wait for a killed file's pipes to drain, in milliseconds. */
const DRAIN_MS = 2_000;

/** Process groups of the files running now. */
const running = new Set<number>();

/**
 * SIGKILLs every running file's process group. Files run detached (their own groups), so a
 * Ctrl-C in the terminal reaches only the runner: it calls this before exiting.
 */
export function killRunning(): void {
  for (const pid of running) killGroup(pid);
}

/**
 * Runs `files` (absolute paths, in the order to start them) on at most `concurrency` workers at
 * once; resolves with one run per worker process, in the order they ended. A lone file runs by
 * itself (the file with node:test's reporters, no worker). Each worker takes the next file of the
 * shared queue when its last one has ended; a worker that was killed or crashed is replaced by a
 * new one while files are left.
 */
export async function runFiles(files: readonly string[], opts: ScheduleOptions): Promise<FileRun[]> {
  const runs: FileRun[] = [];
  if (files.length === 1) {
    const run = await runWorker([...files], 0, opts, true);
    runs.push(run);
    opts.onDone(run);
    return runs;
  }
  const queue = [...files];
  let index = 0;
  async function lane(): Promise<void> {
    while (queue.length > 0) {
      const run = await runWorker(queue, index++, opts, false);
      // A worker that found the queue empty (the others took the last files while it started)
      // and ended cleanly ran nothing worth reporting.
      if (run.files.length === 0 && run.exitCode === 0 && !run.timedOut) continue;
      runs.push(run);
      opts.onDone(run);
      // One that failed before taking a file (batch-entry itself broken) would fail again: the
      // lane stops instead of starting workers forever, and the failure is reported.
      if (run.files.length === 0) return;
    }
  }
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, files.length) }, lane));
  return runs;
}

/** A complete line of the spec reporter that ends a file's suite: `✔ system/x.test.js (12.3ms)`. */
const FILE_END = /^([✔✖]) (\S+\.test\.js) \(/;
/** The line that opens the spec reporter's list of failures at the end of a process's run. */
const FAILURES_HEADING = '✖ failing tests:';

/**
 * One worker process: batch-entry.ts, handed the files of `queue` one at a time over IPC (it asks
 * for the next as the last one's suite ends: reporter.ts), until the queue is empty; or, when
 * `alone`, the one file of `queue` run by itself. Its output (stdout and stderr as they arrive)
 * is handed to `opts.onFile` file by file, at each suite's closing spec line.
 */
function runWorker(queue: string[], index: number, opts: ScheduleOptions, alone: boolean): Promise<FileRun> {
  const countsFile = path.join(opts.scratchDir, `${index}.json`);
  const started = Date.now();
  const ran: string[] = [];
  const reporters = [
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${reporterPath}`, '--test-reporter-destination=stderr', // it writes countsFile itself
  ];
  if (alone) ran.push(queue.shift()!);
  const child = spawn(process.execPath, [...reporters, ...(alone ? ran : [batchEntryPath])], {
    env: { ...opts.env, [REPORT_FILE_ENV]: countsFile }, stdio: ['ignore', 'pipe', 'pipe', ...(alone ? [] : ['ipc' as const])], detached: true,
  });
  if (child.pid !== undefined) running.add(child.pid);
  let pending = ''; // output not yet handed over
  let ending = false; // the spec reporter's closing list of failures has begun: it stays with the process
  let scanned = 0; // pending's complete lines before this index hold no file's end
  const take = (d: Buffer) => {
    pending += d.toString('utf8');
    while (!ending) {
      let cut = -1;
      let ok = true;
      let name = '';
      for (let at = scanned; at < pending.length;) {
        const nl = pending.indexOf('\n', at);
        if (nl < 0) break;
        const first = pending.charCodeAt(at);
        if (first === 0x2714 || first === 0x2716) { // ✔ ✖ at the line's start: a top-level result
          const line = pending.slice(at, nl);
          if (line.startsWith(FAILURES_HEADING)) { ending = true; break; }
          const m = FILE_END.exec(line);
          if (m) { cut = nl + 1; ok = m[1] === '✔'; name = m[2]!; break; }
        }
        at = nl + 1;
        scanned = at;
      }
      if (cut < 0) return;
      opts.onFile?.(name, pending.slice(0, cut), ok);
      pending = pending.slice(cut);
      scanned = 0;
    }
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const drained = Promise.all([child.stdout!, child.stderr!].map((s) => new Promise<void>((r) => s.once('close', () => r()))));
  return new Promise<FileRun>((resolve) => {
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => { timedOut = true; killGroup(child.pid); }, opts.fileTimeoutMs);
    };
    arm();
    child.on('message', (m: { next?: boolean }) => {
      if (!m?.next || !child.connected) return;
      const file = queue.shift();
      if (file === undefined) { child.disconnect(); arm(); return; } // the time left to exit
      ran.push(file);
      child.send({ file });
      arm();
    });
    child.once('exit', async (code) => {
      const durationMs = Date.now() - started;
      const cpuNow = childrenCpuMs();
      const cpuMs = cpuNow === null || lastChildrenCpuMs === null ? null : cpuNow - lastChildrenCpuMs;
      lastChildrenCpuMs = cpuNow;
      clearTimeout(timer);
      killGroup(child.pid); // whatever its files left running
      if (child.pid !== undefined) running.delete(child.pid);
      await Promise.race([drained, new Promise((r) => setTimeout(r, DRAIN_MS))]);
      let output = pending;
      const { counts, stuckAt, timings } = readReport(countsFile);
      if (timedOut) output += `\n✖ killed after ${opts.fileTimeoutMs} ms: the file hangs ${stuckAt}\n`;
      resolve({ file: ran[0] ?? '(none)', files: ran, timings, durationMs, cpuMs, exitCode: code, timedOut, output, counts, stuckAt: timedOut ? stuckAt : null });
    });
  });
}

/** SIGKILLs the process group led by `pid` (a no-op once it is gone). */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try { process.kill(-pid, 'SIGKILL'); } catch { /* already gone */ }
}

/** The counts line of a reporter file (null when absent), where the file last was, and a batch's timings. */
function readReport(file: string): { counts: FileCounts | null; stuckAt: string; timings: FileTiming[] } {
  let counts: FileCounts | null = null;
  const timings: FileTiming[] = [];
  let stuckAt = 'loading the file';
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch { /* the file never started its tests */ }
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const rec = JSON.parse(line) as ReportRecord | FileTiming;
      if ('wallMs' in rec) { timings.push(rec); continue; }
      if ('running' in rec) { stuckAt = `in "${rec.running}"`; continue; }
      counts = rec.counts;
      if (rec.end) stuckAt = 'after reporting (a handle left open)';
      else if (rec.finished !== undefined) stuckAt = `after "${rec.finished}" ended (an after hook, or a handle left open)`;
    } catch { /* a line cut short by the kill */ }
  }
  return { counts, stuckAt, timings };
}
