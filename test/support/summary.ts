/**
 * The end of `make test`'s output (test/run.ts): totals over every file, the failed files and
 * tests, and the slowest files with their wall times (to see where the run's time goes).
 */
import type { FileRun } from './schedule.js';

/** How many of the slowest files the summary lists. */
export const SLOWEST_SHOWN = 10;

/** True when the file ran to its end and nothing in it failed. */
export function fileOk(run: FileRun): boolean {
  return !run.timedOut && run.exitCode === 0 && run.counts !== null && run.counts.fail === 0;
}

/**
 * Formats the summary: counts in node:test's spec-reporter words, failures, the
 * {@link SLOWEST_SHOWN} slowest files, and the run's wall time (`wallMs`, milliseconds).
 * `rel` shortens a file name for display.
 */
export function formatSummary(runs: readonly FileRun[], wallMs: number, rel: (file: string) => string): string {
  const t = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
  for (const r of runs) {
    if (!r.counts) continue;
    for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += r.counts[k];
  }
  const lines: string[] = ['', '── summary ──'];
  lines.push(`ℹ files ${runs.length}`);
  for (const k of Object.keys(t) as (keyof typeof t)[]) lines.push(`ℹ ${k} ${t[k]}`);
  const failed = runs.filter((r) => !fileOk(r));
  if (failed.length > 0) {
    lines.push('', `✖ ${failed.length} failed file(s):`);
    for (const r of failed) {
      const why = r.timedOut ? `killed: timed out ${r.stuckAt}` : r.counts === null ? `exited ${r.exitCode ?? 'on a signal'} before finishing a test` : `exit ${r.exitCode}`;
      lines.push(`  ${rel(r.file)} (${why})`);
      for (const name of r.counts?.failures ?? []) lines.push(`    ✖ ${name}`);
    }
  }
  lines.push('', `slowest ${Math.min(SLOWEST_SHOWN, runs.length)} files (wall time, seconds):`);
  for (const r of [...runs].sort((a, b) => b.durationMs - a.durationMs).slice(0, SLOWEST_SHOWN)) {
    lines.push(`  ${(r.durationMs / 1000).toFixed(1).padStart(6)}  ${rel(r.file)}`);
  }
  lines.push('', `ℹ wall ${(wallMs / 1000).toFixed(1)} s`);
  return lines.join('\n');
}
