/**
 * Runs test files for test/run.ts: one node process per unit, a unit being one file (the file
 * itself, with node:test's reporters; not `node --test <file>`, whose extra runner process cost
 * about 0.3 s of CPU per file) or a batch of files run one after another in one process
 * (batch-entry.ts; batches.ts forms them), at most `concurrency` at a time, in the order given
 * (test/support/order.ts puts the longest first so the run ends evenly). Each unit's output is
 * collected and handed over whole when it ends, so units running side by side do not interleave
 * their lines.
 *
 * A file runs in its own process group: when it ends, anything it left running (a spawned node,
 * a browser) is killed; when it passes `fileTimeoutMs` the whole group is killed and the file
 * fails, so a suite that hangs (in a test or in its teardown) cannot hold the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { REPORT_FILE_ENV, type FileCounts, type ReportRecord } from './reporter.js';
import { childrenCpuMs } from './child-cpu.js';
import type { FileTiming } from './batch-entry.js';

/** Finished children's CPU at the last file's exit (child-cpu.ts). */
let lastChildrenCpuMs: number | null = childrenCpuMs();

/** How one file ended. */
export interface FileRun {
  /** The file, or a batch's first file. */
  file: string;
  /** Every file the unit ran: the file alone, or the batch's files in order. */
  files: string[];
  /** A batch's per-file wall and CPU as its files ended (names relative to dist/test); empty for a single file. */
  timings: FileTiming[];
  /** Wall time from spawn to exit, in milliseconds. */
  durationMs: number;
  /** CPU time of its process and the children it waited for, in milliseconds (null where unknown; child-cpu.ts). */
  cpuMs: number | null;
  /** The process's exit code (null when killed by a signal). */
  exitCode: number | null;
  /** True when it was killed for passing `fileTimeoutMs`. */
  timedOut: boolean;
  /** Everything it wrote (spec reporter, then stderr). */
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
  /** Called as each file ends, in the order they end. */
  onDone(run: FileRun): void;
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

/** Runs every unit (a file, or a batch of files); resolves with their runs in the order given. */
export async function runFiles(units: readonly (readonly string[])[], opts: ScheduleOptions): Promise<FileRun[]> {
  const runs: FileRun[] = new Array(units.length);
  let next = 0;
  async function lane(): Promise<void> {
    while (next < units.length) {
      const i = next++;
      runs[i] = await runUnit(units[i]!, i, opts);
      opts.onDone(runs[i]!);
    }
  }
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, units.length) }, lane));
  return runs;
}

function runUnit(files: readonly string[], index: number, opts: ScheduleOptions): Promise<FileRun> {
  const file = files[0]!;
  const countsFile = path.join(opts.scratchDir, `${index}.json`);
  const started = Date.now();
  // A batch may take as long as its files together would (a system batch holds several of the
  // longest files); it is killed as a whole.
  const timeoutMs = opts.fileTimeoutMs * Math.max(1, Math.ceil(files.length / 2));
  const child = spawn(process.execPath, [
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${reporterPath}`, '--test-reporter-destination=stderr', // it writes countsFile itself
    ...(files.length === 1 ? [file] : [batchEntryPath, ...files]),
  ], { env: { ...opts.env, [REPORT_FILE_ENV]: countsFile }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (child.pid !== undefined) running.add(child.pid);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => err.push(d));
  const drained = Promise.all([child.stdout!, child.stderr!].map((s) => new Promise<void>((r) => s.once('close', () => r()))));
  return new Promise<FileRun>((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; killGroup(child.pid); }, timeoutMs);
    child.once('exit', async (code) => {
      const durationMs = Date.now() - started;
      const cpuNow = childrenCpuMs();
      const cpuMs = cpuNow === null || lastChildrenCpuMs === null ? null : cpuNow - lastChildrenCpuMs;
      lastChildrenCpuMs = cpuNow;
      clearTimeout(timer);
      killGroup(child.pid); // whatever the file left running
      if (child.pid !== undefined) running.delete(child.pid);
      await Promise.race([drained, new Promise((r) => setTimeout(r, DRAIN_MS))]);
      let output = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (stderr.trim() !== '') output += `${output.endsWith('\n') || output === '' ? '' : '\n'}${stderr}`;
      const { counts, stuckAt, timings } = readReport(countsFile);
      if (timedOut) output += `\n✖ killed after ${timeoutMs} ms: the file hangs ${stuckAt}\n`;
      resolve({ file, files: [...files], timings, durationMs, cpuMs, exitCode: code, timedOut, output, counts, stuckAt: timedOut ? stuckAt : null });
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
