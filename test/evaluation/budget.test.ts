/**
 * The bounds on one request's evaluation work: regex programs bounded at compile time
 * (MAX_REGEX_PROGRAM_UNITS), property values bounded for regex/icontains
 * (MAX_MATCH_SUBJECT_CHARS), and the per-request budget on an injected clock (src/evaluation/
 * budget.ts). The clocks here are fakes driven by the test: nothing asserts a duration.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileProject, evaluateFlags, type EvaluationBudget, type FlagDefinition } from '../../src/evaluation/index.js';
import { compilePropertyFilter, describeRegexProblem, isValidRegex } from '../../src/evaluation/properties/index.js';
import { compileRegex, programUnits } from '../../src/evaluation/properties/regex.js';
import { MAX_MATCH_SUBJECT_CHARS, MAX_REGEX_PROGRAM_UNITS } from '../../src/limits.js';
import { flag, project } from './support.js';

const filter = (operator: string, value: string) => compilePropertyFilter({ key: 's', operator, value }, { timezone: 'UTC' });

test('a counted repetition of a large Unicode class is refused with its size; ordinary patterns compile', () => {
  // Estimated under twice the bound, so compiled and refused by its exact size.
  const problem = describeRegexProblem('(?i)\\w{1,500}!');
  assert.match(problem ?? '', /^the compiled pattern is too large \(\d+ program units, more than 250000\)$/);
  // Estimated past twice the bound: refused by the estimate, without compiling.
  assert.match(describeRegexProblem('(?i)\\w{1,1000}!') ?? '', /^the compiled pattern is too large \(about \d+ program units, more than 250000\)$/);
  assert.equal(isValidRegex('(?i)\\w{1,1000}!'), false);
  assert.equal(isValidRegex('\\pL{1,1000}'), false);
  for (const ok of [
    '@(example|posthog)\\.com$', '^https?://[^/]+/(pricing|docs)(/.*)?$', '(?i)^(pro|enterprise)$', '^\\w{3,30}$',
    '\\w{1,100}!', '.{1,1000}', '^[\\w.+-]+@\\w+\\.\\w+$', '(?i)\\p{Greek}+', '^(?=.*@)\\w+',
    '[\\w.+-]{1,64}@[\\w-]{1,63}\\.[a-z]{2,10}$', '^[\\w.]{1,200}@(gmail|yahoo)\\.com$',
  ]) {
    assert.equal(describeRegexProblem(ok), null, ok);
  }
  // Units count class ranges: one `\w` weighs hundreds of literals.
  const word = programUnits(compileRegex('\\w')!.re2!);
  const literal = programUnits(compileRegex('a')!.re2!);
  assert.ok(word > 100 * literal, `\\w ${word} units, a ${literal}`);
  assert.ok(programUnits(compileRegex('\\w{1,100}!')!.re2!) <= MAX_REGEX_PROGRAM_UNITS);
});

test('an oversized pattern is false for both regex and not_regex at evaluation (a missing key still answers first)', () => {
  for (const operator of ['regex', 'not_regex']) {
    const f = filter(operator, '(?i)\\w{1,1000}!');
    assert.equal(f.test({ s: 'hello!' }, 0), false, operator);
    assert.equal(f.test({ s: 'x' }, 0), false, operator);
    assert.equal(f.test({}, 0), operator === 'not_regex', `${operator} missing key`);
  }
});

test('values longer than MAX_MATCH_SUBJECT_CHARS match neither regex/icontains nor their negations', () => {
  const at = 'a'.repeat(MAX_MATCH_SUBJECT_CHARS - 5) + '@x.io';
  const past = 'a' + at;
  assert.equal(at.length, MAX_MATCH_SUBJECT_CHARS);
  const rows: [operator: string, value: string, atBound: boolean][] = [
    ['regex', '@x\\.io$', true], ['not_regex', '@x\\.io$', false],
    ['regex', '^b', false], ['not_regex', '^b', true],
    ['icontains', '@X.IO', true], ['not_icontains', '@X.IO', false],
    ['icontains', 'zzz', false], ['not_icontains', 'zzz', true],
  ];
  for (const [operator, value, atBound] of rows) {
    const f = filter(operator, value);
    assert.equal(f.test({ s: at }, 0), atBound, `${operator} ${value} at the bound`);
    assert.equal(f.test({ s: past }, 0), false, `${operator} ${value} past the bound`);
  }
  // The string form counts: a list whose JSON text is too long is past the bound too.
  const list = compilePropertyFilter({ key: 's', operator: 'not_icontains', value: 'zzz' }, { timezone: 'UTC' });
  assert.equal(list.test({ s: [at] }, 0), false);
  assert.equal(list.test({ s: ['short'] }, 0), true);
});

/** A clock the test moves: `now()` returns `t`; `onRead` may move it. */
function fakeClock(deadline: number, onRead: (reads: number) => number): EvaluationBudget & { reads: number } {
  const c = { reads: 0, deadline, now: () => onRead(++c.reads) };
  return c;
}

const plain = (key: string, rollout = 100): FlagDefinition => flag(key, { groups: [{ properties: [], rollout_percentage: rollout }] });
const withFilter = (key: string, operator: string, value: string): FlagDefinition =>
  flag(key, { groups: [{ properties: [{ key: 'email', type: 'person', operator, value }], rollout_percentage: 100 }] });
const req = (email: string) => ({ distinct_id: 'u1', person_properties: { email }, runtime: 'all' as const });

test('past the deadline the remaining flags are failed timeout entries; the flags answered before keep their results', () => {
  const compiled = compileProject(project([plain('a'), plain('b'), plain('c'), plain('d')]), { timezone: 'UTC' });
  // One clock read per flag: reads 1 and 2 are before the deadline, read 3 is at it.
  const clock = fakeClock(3, (n) => n);
  const r = evaluateFlags(compiled, req('x@y.z'), {}, 0, clock);
  assert.equal(r.errorsWhileComputingFlags, true);
  assert.deepEqual(Object.keys(r.flags), ['a', 'b', 'c', 'd']);
  for (const k of ['a', 'b']) assert.equal(r.flags[k]!.enabled, true, k);
  for (const k of ['c', 'd']) {
    assert.deepEqual({ ...r.flags[k]!, metadata: undefined }, {
      key: k, enabled: false, variant: null, failed: true, metadata: undefined,
      reason: { code: 'timeout:evaluation_budget', condition_index: null, description: 'Timeout: the request ran out of evaluation time before this flag was evaluated' },
    });
    assert.equal(r.flags[k]!.metadata.payload, null);
  }
  assert.equal(clock.reads, 3, 'the clock is not read again once the budget is spent');
  // The same request with time to spare, and with no budget at all, answers every flag.
  for (const budget of [fakeClock(1e9, (n) => n), null]) {
    const ok = evaluateFlags(compiled, req('x@y.z'), {}, 0, budget);
    assert.equal(ok.errorsWhileComputingFlags, false);
    assert.deepEqual(Object.values(ok.flags).map((f) => f.enabled), [true, true, true, true]);
  }
});

test('a flag whose regex or icontains step found the budget spent fails, even though it started in time', () => {
  const long = 'a'.repeat(2_000) + '@example.com';
  for (const [operator, value] of [['regex', '@example\\.com$'], ['not_regex', '^b'], ['icontains', 'example'], ['not_icontains', 'zzz']] as const) {
    const compiled = compileProject(project([plain('first'), withFilter('filtered', operator, value), plain('last')]), { timezone: 'UTC' });
    // Reads: 1 before "first", 2 before "filtered" (in time), 3 inside the operator (past), then none.
    const clock = fakeClock(10, (n) => (n <= 2 ? 0 : 100));
    const r = evaluateFlags(compiled, req(long), {}, 0, clock);
    assert.equal(r.errorsWhileComputingFlags, true, operator);
    assert.equal(r.flags.first!.enabled, true, operator);
    assert.equal(r.flags.filtered!.failed, true, operator);
    assert.equal(r.flags.filtered!.reason.code, 'timeout:evaluation_budget', operator);
    assert.equal(r.flags.last!.failed, true, operator);
    // In time throughout, the same flags match.
    const ok = evaluateFlags(compiled, req(long), {}, 0, fakeClock(10, () => 0));
    assert.equal(ok.errorsWhileComputingFlags, false, operator);
    assert.equal(ok.flags.filtered!.enabled, true, operator);
  }
});

test('short icontains values never read the clock; the budget is gone after the call', () => {
  const compiled = compileProject(project([withFilter('short', 'icontains', 'example')]), { timezone: 'UTC' });
  const clock = fakeClock(10, () => 0);
  const r = evaluateFlags(compiled, req('jane@example.com'), {}, 0, clock);
  assert.equal(r.flags.short!.enabled, true);
  assert.equal(clock.reads, 1, 'one read, before the flag');
  // A spent budget does not leak into the next call.
  const spent = evaluateFlags(compiled, req('jane@example.com'), {}, 0, fakeClock(0, () => 5));
  assert.equal(spent.flags.short!.failed, true);
  const after = evaluateFlags(compiled, req('jane@example.com'), {}, 0);
  assert.equal(after.errorsWhileComputingFlags, false);
  assert.equal(after.flags.short!.enabled, true);
});

test('a backtracking search runs for at most the budget left: cut short by it, the flag fails instead of answering false', () => {
  // A lookahead sends the pattern to V8, where the nested quantifier never finishes on this subject.
  const compiled = compileProject(project([withFilter('slow', 'regex', '^(?=(a+)+$)'), plain('after')]), { timezone: 'UTC' });
  const hostile = 'a'.repeat(40) + '!';
  // 5 ms left on a clock that never moves: only the search's own time limit (5 ms, not 50) stops it.
  const r = evaluateFlags(compiled, req(hostile), {}, 0, fakeClock(5, () => 0));
  assert.equal(r.flags.slow!.failed, true);
  assert.equal(r.flags.slow!.reason.code, 'timeout:evaluation_budget');
  assert.equal(r.flags.after!.failed, true);
  // With the budget far away, the 50 ms limit stops it: Rust's limit error, false, not a failure.
  const limited = evaluateFlags(compiled, req(hostile), {}, 0, fakeClock(1e9, () => 0));
  assert.equal(limited.errorsWhileComputingFlags, false);
  assert.equal(limited.flags.slow!.enabled, false);
  assert.equal(limited.flags.after!.enabled, true);
});
