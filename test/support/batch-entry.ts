/**
 * Runs several test files in one node process, one after another, so the product's modules are
 * loaded once for all of them instead of once per file (loading the control plane's modules costs
 * about a second of CPU, more than many of its test files spend testing) and later files run warm.
 * The files are its arguments, and, when test/support/schedule.ts started it as a worker (an IPC
 * channel), the files the runner sends one at a time (`{"file": path}`) until it disconnects.
 *
 * Each file becomes a suite named by its path relative to dist/test, and its module is imported
 * inside that suite: its top-level tests and hooks (`before`, `after`) belong to the suite, so a
 * file's `after` still runs when that file's tests end, before the next file starts. As each
 * file ends, a `{"file", "wallMs", "cpuMs"}` line (milliseconds; CPU of this process, its threads
 * included) is appended to the report file (reporter.ts REPORT_FILE_ENV) for the run's summary.
 * While a file runs, SUITE_ENV names it (its databases carry the name: db.ts).
 *
 * Usage: `node --test-reporter=… dist/test/support/batch-entry.js [<file.test.js>…]` (absolute paths).
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

/** Registers `file` as a suite of this process's run (it runs when the suites before it have ended). */
function runFile(file: string): void {
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

for (const file of process.argv.slice(2)) runFile(file);
if (process.send) {
  // A worker of test/support/schedule.ts: files arrive one at a time; the reporter asks for the
  // next as each file's suite ends (reporter.ts), and the runner disconnects when none are left.
  process.on('message', (m: { file?: string }) => { if (typeof m?.file === 'string') runFile(m.file); });
  process.send({ next: true });
}
