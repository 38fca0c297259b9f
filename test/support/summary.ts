/**
 * The end of `make test`'s output (test/run.ts): totals over every file, the failed files and
 * tests, and the slowest files with their wall times (to see where the run's time goes).
 */
import type { FileRun } from './schedule.js';

/** How many of the slowest files the summary lists. */
export const SLOWEST_SHOWN = 10;

/** A process's name: the file run alone, or a worker's first file and how many more it ran. */
export function unitName(run: FileRun, rel: (file: string) => string): string {
  if (run.files.length === 0) return 'a worker process, before it took a file';
  return run.files.length === 1 ? rel(run.file) : `${rel(run.file)} and ${run.files.length - 1} more files (one process)`;
}

/** One file's figures: wall and CPU in milliseconds (CPU null where unknown). */
export interface FileFigures { name: string; wallMs: number; cpuMs: number | null }

/** Per-file figures: a lone file's process, or each of a worker's files' own timing. */
export function fileFigures(runs: readonly FileRun[], rel: (file: string) => string): FileFigures[] {
  return runs.flatMap((r) => (r.files.length === 1
    ? [{ name: rel(r.file), wallMs: r.durationMs, cpuMs: r.cpuMs }]
    : r.timings.map((t) => ({ name: t.file, wallMs: t.wallMs, cpuMs: t.cpuMs }))));
}

/** True when the unit ran to its end and nothing in it failed. */
export function fileOk(run: FileRun): boolean {
  return !run.timedOut && run.exitCode === 0 && run.counts !== null && run.counts.fail === 0;
}

/**
 * Formats the summary: counts in node:test's spec-reporter words, failures, the
 * {@link SLOWEST_SHOWN} slowest files, and the run's wall time (`wallMs`, milliseconds).
 * `rel` shortens a file name for display.
 */
export function formatSummary(runs: readonly FileRun[], wallMs: number, rel: (file: string) => string, postgresCpuMs: number | null = null): string {
  const t = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
  for (const r of runs) {
    if (!r.counts) continue;
    for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += r.counts[k];
  }
  const lines: string[] = ['', '── summary ──'];
  lines.push(`ℹ files ${runs.reduce((a, r) => a + r.files.length, 0)} in ${runs.length} processes`);
  for (const k of Object.keys(t) as (keyof typeof t)[]) lines.push(`ℹ ${k} ${t[k]}`);
  const failed = runs.filter((r) => !fileOk(r));
  if (failed.length > 0) {
    lines.push('', `✖ ${failed.length} failed file(s):`);
    for (const r of failed) {
      const why = r.timedOut ? `killed: timed out ${r.stuckAt}` : r.counts === null ? `exited ${r.exitCode ?? 'on a signal'} before finishing a test` : `exit ${r.exitCode}`;
      lines.push(`  ${unitName(r, rel)} (${why})`);
      for (const name of r.counts?.failures ?? []) lines.push(`    ✖ ${name}`);
    }
  }
  const figures = fileFigures(runs, rel);
  const cpu = (f: FileFigures) => (f.cpuMs === null ? '     ?' : (f.cpuMs / 1000).toFixed(1).padStart(6));
  lines.push('', `slowest ${Math.min(SLOWEST_SHOWN, figures.length)} files (wall, CPU: seconds; a file run by a worker leaves out loading the modules its worker shares):`);
  for (const f of [...figures].sort((a, b) => b.wallMs - a.wallMs).slice(0, SLOWEST_SHOWN)) {
    lines.push(`  ${(f.wallMs / 1000).toFixed(1).padStart(6)} ${cpu(f)}  ${f.name}`);
  }
  const measured = runs.filter((r) => r.cpuMs !== null);
  if (measured.length > 0) {
    lines.push('', `most CPU (seconds; the processes' ${(measured.reduce((a, r) => a + r.cpuMs!, 0) / 1000).toFixed(0)} s in all, Postgres not included):`);
    for (const f of figures.filter((x) => x.cpuMs !== null).sort((a, b) => b.cpuMs! - a.cpuMs!).slice(0, SLOWEST_SHOWN)) lines.push(`  ${cpu(f)}  ${f.name}`);
  }
  if (postgresCpuMs !== null) lines.push('', `ℹ Postgres CPU ${(postgresCpuMs / 1000).toFixed(0)} s (the run's cluster: its server and every backend)`);
  lines.push('', `ℹ wall ${(wallMs / 1000).toFixed(1)} s`);
  return lines.join('\n');
}
