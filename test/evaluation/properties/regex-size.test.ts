/**
 * The RE2 program-size estimate (src/evaluation/properties/regex-size.ts) against the compiled
 * size (regex.ts `programUnits` of re2js's program), and the refusal it allows before compiling:
 * patterns whose program would be far past MAX_REGEX_PROGRAM_UNITS are refused as too large,
 * without the compile that held the thread for seconds (and, past re2js's own limits, fell back
 * to the backtracking engine and was accepted).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RE2JS } from 're2js';
import { estimateProgramUnits, MAX_EXACT_CLASSES } from '../../../src/evaluation/properties/regex-size.js';
import { describeRegexProblem, programUnits } from '../../../src/evaluation/properties/regex.js';
import { Translator } from '../../../src/evaluation/properties/regex-translate.js';
import { MAX_REGEX_PROGRAM_UNITS } from '../../../src/limits.js';

const valid = (s: string) => { try { RE2JS.compile(s); return true; } catch { return false; } };
const re2Source = (pattern: string) => new Translator(pattern, valid).translate();

/** Distinct classes, more than the estimate compiles exactly: `[a-b][c-d]…`. */
const manyClasses = Array.from({ length: MAX_EXACT_CLASSES + 8 }, (_, i) => `[${String.fromCharCode(0x100 + 2 * i)}-${String.fromCharCode(0x101 + 2 * i)}]`).join('');

test('the estimate is within 0.75–1.6× of the compiled program, typical and hostile shapes alike', () => {
  for (const pattern of [
    '(?i)\\w{1,250}!', '(?i)\\w{1,1000}!', '[\\w.+-]{1,64}@[\\w-]{1,63}\\.[a-z]{2,10}$', '^[a-z0-9._%+-]{1,64}@example\\.(com|org)$',
    '(?i)^.{0,80}@.{0,80}$', '^([a-z0-9-]+\\.)*posthog\\.com$', '\\d{3}-\\d{4}', '(?i)(foo|bar){2,5}', '\\p{Greek}+\\s*\\d{1,10}',
    '[^a-z]{100}', '(?s).*x.*y', '(?i)[[:alpha:]]{1,50}', '(\\w{1,40}|\\d{1,40}){1,5}', `(?:${manyClasses}){1,200}`,
  ]) {
    const source = re2Source(pattern);
    const actual = programUnits(RE2JS.compile(source));
    const ratio = estimateProgramUnits(source, programUnits) / actual;
    assert.ok(ratio >= 0.75 && ratio <= 1.6, `${pattern}: estimate / compiled = ${ratio.toFixed(2)} (${actual} units)`);
  }
});

test('a pattern estimated far past the bound is refused as too large, naming the estimate', () => {
  for (const pattern of [
    '(?i)' + '\\w{1,1000}'.repeat(1000), // 10 KB: re2js's compile failed after seconds and V8's engine accepted it
    '(?i)' + '\\w{1,1000}'.repeat(8000),
    '(?i)' + '(\\w{1,1000}|\\p{L}{1,1000})'.repeat(50),
    `(?:${manyClasses}){1,1000}`.repeat(200),
  ]) {
    const problem = describeRegexProblem(pattern);
    assert.match(problem ?? 'accepted', /^the compiled pattern is too large \(about \d+ program units, more than 250000\)$/, pattern.slice(0, 40));
  }
});

test('patterns near the bound are judged on their compiled size, as before', () => {
  assert.equal(describeRegexProblem('(?i)\\w{1,250}!'), null); // 200,002 units
  assert.match(describeRegexProblem('(?i)\\w{1,1000}!') ?? '', /too large \((about )?\d+ program units/); // 800,002 units
  assert.equal(describeRegexProblem('[\\w.+-]{1,64}@[\\w-]{1,63}\\.[a-z]{2,10}$'), null);
  assert.ok(MAX_REGEX_PROGRAM_UNITS === 250_000);
});

test('the estimate never throws on text the translator would not emit', () => {
  for (const source of ['(', ')', '[', '\\', 'a{', 'a{1', '{1,2}', '[]a]', '[^]', '(?P<n>', '\\p{', 'x{99999999999}', '((((']) {
    assert.equal(typeof estimateProgramUnits(source, programUnits), 'number', source);
  }
});
