/**
 * The order test/run.ts starts files in: longest first (greedy longest-processing-time
 * scheduling), so the last files to start are short ones and the lanes finish together instead
 * of one long file starting last and running alone.
 *
 * A file's expected duration is its wall time in the previous run on this checkout (kept in
 * `dist/test/durations.json`), else in the full run committed as `test/durations.json` (a fresh
 * clone's first run); a file timed in neither (a new file) is estimated from where it lives
 * (system tests start whole stacks) and its size.
 */
import fs from 'node:fs';

/** Expected wall time per file, in milliseconds, keyed by the file's path relative to dist/test. */
export type Durations = Record<string, number>;

/** Reads the durations file; an absent or unreadable one gives no durations. */
export function readDurations(file: string): Durations {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
    return parsed !== null && typeof parsed === 'object' ? parsed as Durations : {};
  } catch {
    return {};
  }
}

/** Merges `measured` into the durations file (files not run this time keep their figure). */
export function writeDurations(file: string, measured: Durations): void {
  fs.writeFileSync(file, `${JSON.stringify({ ...readDurations(file), ...measured }, null, 1)}\n`);
}

/**
 * A guess for a file never timed, in milliseconds: system tests 20 s plus 1 s per KiB of source,
 * others 1 s plus 0.5 s per KiB (rough fits to this suite's timings on a 2-core machine; only the
 * order matters).
 */
export function estimateMs(rel: string, bytes: number): number {
  const kib = bytes / 1024;
  return rel.startsWith('system/') ? 20_000 + 1_000 * kib : 1_000 + 500 * kib;
}

/**
 * Each file's expected wall time in milliseconds: its figure in `durations` (keyed by `rel`), else
 * {@link estimateMs} from its place and size.
 */
export function expectation(files: readonly string[], durations: Durations, rel: (file: string) => string): (file: string) => number {
  const expected = new Map<string, number>();
  for (const f of files) {
    const key = rel(f);
    let ms = durations[key];
    if (typeof ms !== 'number') {
      let bytes = 0;
      try { bytes = fs.statSync(f).size; } catch { /* listed a moment ago; keep 0 */ }
      ms = estimateMs(key, bytes);
    }
    expected.set(f, ms);
  }
  return (f) => expected.get(f) ?? 0;
}

/**
 * Sorts `files` (absolute paths) longest expected first. `rel` maps a file to its durations key;
 * ties keep alphabetical order.
 */
export function orderFiles(files: readonly string[], durations: Durations, rel: (file: string) => string): string[] {
  const expected = expectation(files, durations, rel);
  return [...files].sort((a, b) => expected(b) - expected(a) || a.localeCompare(b));
}
