/**
 * A node:test reporter for test/run.ts: writes a JSON line `{"running": name}` as each test
 * begins (`test:dequeue`) and `{"finished": name}` as each top-level one ends, so a file killed
 * for hanging can say where, and, at the end of the file's run, one with its counts and the
 * names of its failed tests (shape {@link FileCounts}). The human-readable output comes from the
 * built-in `spec` reporter beside it.
 *
 * Events are node:test's reporter stream (Node 20): `test:pass` / `test:fail` per test and per
 * suite (`details.type === 'suite'`); `skip` / `todo` ride on the event's data.
 */

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

/** node:test custom reporter entry point (an async generator over the event stream). */
export default async function* countsReporter(source: AsyncIterable<{ type: string; data: unknown }>): AsyncGenerator<string> {
  const counts: FileCounts = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0, failures: [] };
  const path: string[] = []; // names of the enclosing suites, by nesting, in report order
  const running: string[] = []; // the same, in execution order
  for await (const event of source) {
    if (event.type === 'test:dequeue') {
      const d = event.data as TestEventData;
      running.length = d.nesting;
      running.push(d.name);
      yield `${JSON.stringify({ running: running.join(' > ') })}\n`;
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
    if (d.nesting === 0) yield `${JSON.stringify({ finished: d.name })}\n`;
    const isSuite = d.details?.type === 'suite';
    if (event.type === 'test:fail' && d.details?.error?.failureType === 'cancelledByParent') {
      if (!isSuite) { counts.tests++; counts.cancelled++; }
      continue;
    }
    if (event.type === 'test:fail') {
      // A failing suite (a hook threw) is reported too: its tests may all have passed.
      counts.failures.push([...path.slice(0, d.nesting), d.name].join(' > '));
      if (isSuite) continue;
      counts.tests++;
      counts.fail++;
      continue;
    }
    if (isSuite) continue;
    counts.tests++;
    if (d.skip !== undefined && d.skip !== false) counts.skipped++;
    else if (d.todo !== undefined && d.todo !== false) counts.todo++;
    else counts.pass++;
  }
  yield `${JSON.stringify(counts)}\n`;
}
