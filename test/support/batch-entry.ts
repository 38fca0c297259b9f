/**
 * Runs several test files in one node process, one after another (test/support/schedule.ts
 * starts it for a batch, test/support/batches.ts forms them), so the product's modules are loaded
 * once for the batch instead of once per file: loading the control plane's modules costs about
 * a second of CPU, more than many of its test files spend testing.
 *
 * Each file becomes a suite named by its path relative to dist/test, and its module is imported
 * inside that suite: its top-level tests and hooks (`before`, `after`) belong to the suite, so a
 * file's `after` still runs when that file's tests end, before the next file starts. As each
 * file ends, a `{"file", "wallMs", "cpuMs"}` line (milliseconds; CPU of this process, its threads
 * included) is appended to the report file (reporter.ts REPORT_FILE_ENV) for the run's summary.
 * While a file runs, SUITE_ENV names it (its databases carry the name: db.ts).
 *
 * Usage: `node --test-reporter=… dist/test/support/batch-entry.js <file.test.js>…` (absolute paths).
 */
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { REPORT_FILE_ENV } from './reporter.js';
import { SUITE_ENV } from './db.js';

/** dist/test: file names are reported relative to it. */
const testRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

/** One line of a batch's per-file timings in the report file. */
export interface FileTiming { file: string; wallMs: number; cpuMs: number }

/** Appends `timing` to the report file (nothing without one). */
function record(timing: FileTiming): void {
  const file = process.env[REPORT_FILE_ENV];
  if (file) fs.appendFileSync(file, `${JSON.stringify(timing)}\n`);
}

for (const file of process.argv.slice(2)) {
  const name = path.relative(testRoot, file);
  describe(name, async () => {
    let wall = 0;
    let cpu = 0;
    const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
    before(() => { wall = performance.now(); cpu = cpuNow(); process.env[SUITE_ENV] = name; });
    await import(pathToFileURL(file).href);
    after(() => record({ file: name, wallMs: performance.now() - wall, cpuMs: cpuNow() - cpu }));
  });
}
