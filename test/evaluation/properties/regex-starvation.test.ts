/**
 * A backtracking search's time limit is wall time, so a process that is stopped (or starved of
 * CPU) in the middle of a search runs out of time without having searched. regex.ts runs such a
 * search again (STARVED_CPU_FRACTION) instead of answering a false no-match. A real child
 * process searches in a loop while this test stops it with SIGSTOP for longer than the limit and
 * resumes it with SIGCONT, again and again: every search must still answer the right result.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { exitWithOutput } from '../../support/run-command.js';
import { BACKTRACK_TIMEOUT_MS } from '../../../src/evaluation/properties/regex.js';

const REGEX_MODULE = pathToFileURL(path.join(PACKAGE_ROOT, 'dist', 'src', 'evaluation', 'properties', 'regex.js')).href;
/** How long the child searches, and how the parent stops it: every PERIOD_MS, for STOP_MS (past the limit). */
const SEARCH_MS = 1_500;
const PERIOD_MS = 150;
const STOP_MS = BACKTRACK_TIMEOUT_MS + 40;

/** The child: searches a lookahead pattern (backtracking engine) until SEARCH_MS have passed; prints its counts. */
const CHILD = `
const { compileRegex, regexSearch } = await import(${JSON.stringify(REGEX_MODULE)});
const c = compileRegex('foo(?=bar)');
const subject = 'x'.repeat(8000) + 'foobar';
const counts = { true: 0, false: 0, null: 0 };
process.stdout.write('ready\\n');
const end = Date.now() + ${SEARCH_MS};
while (Date.now() < end) counts[String(regexSearch(c, subject))]++;
process.stdout.write(JSON.stringify(counts) + '\\n');
`;

test('a backtracking search whose process is stopped past the time limit answers right once resumed', async () => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString('utf8'); });
  const exited = exitWithOutput(child).then(({ code }) => code);
  await new Promise<void>((resolve) => { const check = () => (out.includes('ready') ? resolve() : setTimeout(check, 5)); check(); });
  let stops = 0;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const began = Date.now();
  while (Date.now() - began < SEARCH_MS - PERIOD_MS && child.exitCode === null) {
    await sleep(PERIOD_MS - STOP_MS);
    child.kill('SIGSTOP');
    await sleep(STOP_MS);
    child.kill('SIGCONT');
    stops++;
  }
  assert.equal(await exited, 0);
  const counts = JSON.parse(out.trim().split('\n').pop()!) as { true: number; false: number; null: number };
  console.log(`${stops} stops of ${STOP_MS} ms during ${SEARCH_MS} ms of searching: ${JSON.stringify(counts)}`);
  assert.ok(stops >= 5, `stopped ${stops} times`);
  assert.ok(counts.true > 0);
  assert.equal(counts.false, 0);
  assert.equal(counts.null, 0, 'no search answered the limit error because its process was stopped');
});
