/**
 * Runs test files for test/run.ts: one node process per file (the file itself, with node:test's
 * reporters; not `node --test <file>`, whose extra runner process cost about 0.3 s of CPU per
 * file), at most `concurrency` at a time, in the order given (test/support/order.ts puts the longest first so
 * the run ends evenly). Each file's output is collected and handed over whole when it ends, so
 * files running side by side do not interleave their lines.
 *
 * A file runs in its own process group: when it ends, anything it left running (a spawned node,
 * a browser) is killed; when it passes `fileTimeoutMs` the whole group is killed and the file
 * fails, so a suite that hangs (in a test or in its teardown) cannot hold the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { REPORT_FILE_ENV, type FileCounts, type ReportRecord } from './reporter.js';

/** How one file ended. */
export interface FileRun {
  file: string;
  /** Wall time from spawn to exit, in milliseconds. */
  durationMs: number;
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

/** Runs every file; resolves with their runs in the order given. */
export async function runFiles(files: readonly string[], opts: ScheduleOptions): Promise<FileRun[]> {
  const runs: FileRun[] = new Array(files.length);
  let next = 0;
  async function lane(): Promise<void> {
    while (next < files.length) {
      const i = next++;
      runs[i] = await runFile(files[i]!, i, opts);
      opts.onDone(runs[i]!);
    }
  }
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, files.length) }, lane));
  return runs;
}

function runFile(file: string, index: number, opts: ScheduleOptions): Promise<FileRun> {
  const countsFile = path.join(opts.scratchDir, `${index}.json`);
  const started = Date.now();
  const child = spawn(process.execPath, [
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${reporterPath}`, '--test-reporter-destination=stderr', // it writes countsFile itself
    file,
  ], { env: { ...opts.env, [REPORT_FILE_ENV]: countsFile }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (child.pid !== undefined) running.add(child.pid);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => err.push(d));
  const drained = Promise.all([child.stdout!, child.stderr!].map((s) => new Promise<void>((r) => s.once('close', () => r()))));
  return new Promise<FileRun>((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; killGroup(child.pid); }, opts.fileTimeoutMs);
    child.once('exit', async (code) => {
      const durationMs = Date.now() - started;
      clearTimeout(timer);
      killGroup(child.pid); // whatever the file left running
      if (child.pid !== undefined) running.delete(child.pid);
      await Promise.race([drained, new Promise((r) => setTimeout(r, DRAIN_MS))]);
      let output = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (stderr.trim() !== '') output += `${output.endsWith('\n') || output === '' ? '' : '\n'}${stderr}`;
      const { counts, stuckAt } = readReport(countsFile);
      if (timedOut) output += `\n✖ killed after ${opts.fileTimeoutMs} ms: the file hangs ${stuckAt}\n`;
      resolve({ file, durationMs, exitCode: code, timedOut, output, counts, stuckAt: timedOut ? stuckAt : null });
    });
  });
}

/** SIGKILLs the process group led by `pid` (a no-op once it is gone). */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try { process.kill(-pid, 'SIGKILL'); } catch { /* already gone */ }
}

/** The counts line of a reporter file (null when absent), and where the file last was. */
function readReport(file: string): { counts: FileCounts | null; stuckAt: string } {
  let counts: FileCounts | null = null;
  let stuckAt = 'loading the file';
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch { /* the file never started its tests */ }
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const rec = JSON.parse(line) as ReportRecord;
      if ('running' in rec) { stuckAt = `in "${rec.running}"`; continue; }
      counts = rec.counts;
      if (rec.end) stuckAt = 'after reporting (a handle left open)';
      else if (rec.finished !== undefined) stuckAt = `after "${rec.finished}" ended (an after hook, or a handle left open)`;
    } catch { /* a line cut short by the kill */ }
  }
  return { counts, stuckAt };
}
