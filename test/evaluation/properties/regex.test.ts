/**
 * Rust-syntax regex translation (research/posthog-flag-evaluation.md §3.3 "regex"): validity,
 * inline flags, dialect translations and the documented gaps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePropertyFilter, describeRegexProblem, isValidRegex } from '../../../src/evaluation/properties/index.js';

type ValidRow = [pattern: string, valid: boolean, why: string];
const validity: ValidRow[] = [
  ['', true, 'empty pattern matches everything'],
  ['abc', true, 'literal'],
  ['(', false, 'unbalanced ('],
  [')', false, 'unbalanced )'],
  ['[a-z', false, 'unclosed class'],
  ['a{2,1}', false, 'reversed repetition'],
  ['a{', false, 'Rust rejects a lone {'],
  ['a{x}', false, 'non-numeric repetition'],
  ['*a', false, 'nothing to repeat'],
  ['\\', false, 'trailing backslash'],
  ['(?i)abc', true, 'leading inline flag'],
  ['(?i)(?s)a.b', true, 'several leading flag groups'],
  ['(?is-m)a.b', true, 'flags with negation'],
  ['(?U)a+', true, 'swap greed'],
  ['(?u)a', true, 'Unicode flag accepted'],
  ['a(?i)b', false, 'inline flag not at the start (unsupported)'],
  ['(?i:ab)', false, 'scoped flag group (unsupported)'],
  ['(?z)a', false, 'unknown flag'],
  ['\\p{L}', true, 'Unicode general category'],
  ['\\pL', true, 'one-letter Unicode class'],
  ['\\p{Greek}', true, 'bare script name (Script_Extensions)'],
  ['\\p{sc=Greek}', true, 'script with key'],
  ['\\p{gc:Lu}', true, 'general category with colon'],
  ['\\p{^L}', true, 'negated inside braces'],
  ['\\P{White_Space}', true, 'negated binary property'],
  ['\\p{letter}', false, 'loose property spelling (unsupported)'],
  ['\\p{Bogus}', false, 'unknown property'],
  ['\\p{L', false, 'unclosed property'],
  ['[\\W]', false, '\\W inside a class (unsupported)'],
  ['(?-u)[\\D]', false, '\\D inside a class under (?-u) (unsupported)'],
  ['a]b}', true, 'lone ] and } are literals'],
  ['(a+)+', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(?:[a-z]+|[0-9]+)*@', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(\\w+\\.)*com', true, 'nested quantifier with a separating literal'],
  ['^([a-z0-9-]+\\.)*posthog\\.com$', true, 'domain pattern: separator the class cannot match'],
  ['^(?:[^/]+/)*index\\.html$', true, 'path pattern: separator excluded by a negated class'],
  ['((\\w+)\\.)+x', true, 'separator after an inner group'],
  ['^\\w+(\\.\\w+)*@', true, 'leading separator of the next iteration'],
  ['^[a-z]+(-[a-z]+)*$', true, 'slug pattern: leading separator'],
  ['^\\w+(\\.?\\w+)*@', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(a\\w+)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(?:a\\x{2E}?)+', true, 'bounded atoms need no separator'],
  ['(\\w+\\s?)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(\\w+\\.?)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(\\w+\\d+)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(.+\\.)*x', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(?i)([a-z]+X)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(x\\w+)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(\\d+\\.\\d+)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(\\w+|\\d+)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(a|b+)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['((\\w+\\.)+x)*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(\\w+(?=\\.))*', true, 'linear engine: nested quantifiers are safe (was refused under V8)'],
  ['(a+){2}', true, 'bounded outer repetition'],
  ['(a{1,3})+', true, 'bounded inner repetition'],
  ['(?P<year>\\d{4})', true, 'Python-style named group'],
  ['(?<year>\\d{4})-\\k<year>', true, 'named backreference'],
  ['(a)\\1', true, 'numbered backreference'],
  ['\\1', false, 'backreference to a missing group'],
  ['(?=a)', true, 'lookahead'],
  ['(?<!a)b', true, 'lookbehind'],
  ['(?>a)', false, 'atomic group (unsupported)'],
  ['a*+', false, 'possessive quantifier (unsupported)'],
  ['\\x{41}', true, 'braced hex escape'],
  ['\\u{1F600}', true, 'astral code point'],
  ['[\\u{1F600}]', true, 'astral code point in a class'],
  ['\\x{110000}', false, 'code point out of range'],
  ['[[:alpha:]]+', true, 'POSIX class'],
  ['[[:^alpha:]]', false, 'negated POSIX class (unsupported)'],
  ['[[:bogus:]]', false, 'unknown POSIX class'],
  ['[a-z&&[^aeiou]]', false, 'class intersection (unsupported)'],
  ['[a[b]]', false, 'nested class (unsupported)'],
  ['\\-\\#\\@\\&\\~', true, 'Rust escapes any ASCII punctuation'],
  ['\\<', false, 'word-start boundary (unsupported)'],
  ['\\Z', false, '\\Z does not exist in Rust'],
  ['\\K', false, 'unknown escape'],
  ['\\b{start}', false, 'special word boundary (unsupported)'],
  ['(?x) a b # comment', true, 'extended mode'],
];
for (const [pattern, valid, why] of validity) {
  test(`isValidRegex ${JSON.stringify(pattern)}: ${why}`, () => {
    assert.equal(isValidRegex(pattern), valid);
    assert.equal(describeRegexProblem(pattern) === null, valid);
  });
}

type MatchRow = [pattern: string, subject: string, expected: boolean, why: string];
const matches: MatchRow[] = [
  ['(?i)HELLO', 'say hello', true, '(?i) becomes the i flag'],
  ['(?i)é', 'É', true, 'case-insensitive non-ASCII'],
  ['a.b', 'a\nb', false, '. excludes \\n'],
  ['a.b', 'a\rb', true, '. includes \\r as in Rust'],
  ['a.b', 'a\u2028b', true, '. includes U+2028 as in Rust'],
  ['(?s)a.b', 'a\nb', true, '(?s) lets . match \\n'],
  ['^b$', 'a\nb', false, 'without (?m), ^ and $ anchor the text'],
  ['(?m)^b$', 'a\nb\nc', true, '(?m) anchors lines'],
  ['(?x) a b # comment', 'ab', true, 'extended mode drops whitespace and comments'],
  ['(?x)a\\ b', 'a b', true, 'escaped space in extended mode'],
  ['(?x)[a b]', ' ', false, 'extended mode ignores whitespace in classes'],
  ['(?U)<.+>', '<a><b>', true, 'swapped greed still finds a match'],
  ['\\Aab', 'xab', false, '\\A is the start of text'],
  ['(?m)\\Ab', 'a\nb', false, '\\A ignores (?m)'],
  ['b\\z', 'ab', true, '\\z is the end of text'],
  ['b\\z', 'ab\n', false, '\\z does not allow a trailing newline'],
  ['(?P<y>\\d{4})-(?P=y)', '2024-2024', true, 'Python-style backreference'],
  ['(?P<y>\\d{4})-(?P=y)', '2024-2025', false, 'Python-style backreference, mismatch'],
  ['(a)\\1', 'aa', true, 'numbered backreference'],
  ['(a)\\10', 'a', false, 'backreference to group 10 is refused'],
  ['\\x{e9}', 'é', true, 'braced hex'],
  ['\\u00e9', 'é', true, '\\u escape'],
  ['\\u{1F600}+', '😀😀', true, 'astral code point repeated as a unit'],
  ['[[:digit:]]+', 'abc123', true, 'POSIX digit'],
  ['[^[:upper:]]', 'ABC', false, 'negated class with POSIX member'],
  ['\\#\\-', '#-', true, 'punctuation escapes'],
  ['[]a]', ']', true, 'a leading ] is literal in Rust'],
  ['[^]a]', 'b', true, 'a leading ] after ^ is literal in Rust'],
  ['a{,2}b', 'aab', true, '{,n} means {0,n}'],
  ['a/b', 'a/b', true, 'slash needs no escape'],
  ['\\d', '٣', true, '\\d is Unicode Nd, as Rust'],
  ['(?-u)\\d', '٣', false, '(?-u) makes \\d ASCII'],
  ['\\w', 'é', true, '\\w is Unicode, as Rust'],
  ['^[\\w.+-]+@', 'josé@example.com', true, 'Unicode \\w inside a class'],
  ['(?-u)^\\w+$', 'josé', false, '(?-u) makes \\w ASCII'],
  ['\\W', 'é', false, '\\W excludes Unicode letters'],
  ['caf\\b', 'café', false, '\\b is a Unicode word boundary (no boundary inside café)'],
  ['caf\\B', 'café', true, '\\B inside a Unicode word'],
  ['\\bcafé\\b', 'un café noir', true, '\\b around a Unicode word'],
  ['\\s', '\u0085', true, '\\s includes NEL (White_Space)'],
  ['\\s', '\ufeff', false, '\\s excludes BOM (not White_Space)'],
  ['\\p{Greek}+', 'αβγ', true, 'script class'],
  ['\\pL', '1', false, 'letter class on a digit'],
  ['\\P{L}', '1', true, 'negated letter class'],
  ['\\p{^L}', 'a', false, 'caret-negated letter class'],
  ['😀+$', '😀😀', true, 'a quantifier applies to the whole astral character'],
  ['^.$', '😀', true, '. matches one code point'],
  ['[😀]', '😀', true, 'astral character in a class'],
  ['\\#\\@\\%', '#@%', true, 'punctuation escapes become literals'],
  ['[\\-\\#]', '#', true, 'punctuation escapes inside a class'],
  ['a]b}', 'a]b}', true, 'lone ] and } match literally'],
  ['(?i)ſ', 'S', true, 'simple case folding: long s matches S'],
  ['(?i)\\p{Lu}', 'a', true, 'case-insensitive property class'],
  ['\\s', '\u00a0', true, '\\s is Unicode in both'],
  // vectors pinned by Rust's property_matching.rs tests
  ['foo(?=bar)', 'foobar123', true, 'Rust: positive lookahead'],
  ['foo(?=bar)', 'foobaz', false, 'Rust: positive lookahead, no'],
  ['foo(?!bar)', 'foo', true, 'Rust: negative lookahead'],
  ['foo(?!bar)', 'foobar', false, 'Rust: negative lookahead, no'],
  ['(?<=foo)bar', '123foobar456', true, 'Rust: positive lookbehind'],
  ['(?<=foo)bar', 'bar', false, 'Rust: positive lookbehind, no'],
  ['(?<!foo)bar', 'bazbar', true, 'Rust: negative lookbehind'],
  ['(?<!foo)bar', 'foobar', false, 'Rust: negative lookbehind, no'],
  ['\\b(\\w+)\\s+\\1\\b', 'this is is a test', true, 'Rust: repeated word backreference'],
  ['\\b(\\w+)\\s+\\1\\b', 'the quick brown fox', false, 'Rust: repeated word, no'],
  ['<(\\w+)>.*</\\1>', '<div>content</div>', true, 'Rust: matching tags'],
  ['<(\\w+)>.*</\\1>', '<div>content</span>', false, 'Rust: mismatched tags'],
  ['^[\\w.+-]+@(?=.*\\.(com|org)$)[\\w.-]+$', 'test@posthog.org', true, 'Rust: email with lookahead'],
  ['^[\\w.+-]+@(?=.*\\.(com|org)$)[\\w.-]+$', 'user@example.net', false, 'Rust: email with lookahead, no'],
  ['^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d).{8,}$', 'SecurePass123', true, 'Rust: password rule'],
  ['^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d).{8,}$', 'SHORT1', false, 'Rust: password rule, no'],
  ['\\.com$', 'value.com', true, 'Rust: escaped dot'],
  ['^([a-z0-9-]+\\.)*posthog\\.com$', 'eu.app.posthog.com', true, 'accepted nested pattern matches'],
  ['^([a-z0-9-]+\\.)*posthog\\.com$', 'posthog.com', true, 'accepted nested pattern, zero iterations'],
  ['^([a-z0-9-]+\\.)*posthog\\.com$', 'evil.com', false, 'accepted nested pattern, no match'],
  ['^\\w+(\\.\\w+)*@', 'first.middle.last@x.io', true, 'leading-separator pattern matches'],
];
for (const [pattern, subject, expected, why] of matches) {
  test(`regex ${JSON.stringify(pattern)} on ${JSON.stringify(subject)}: ${why}`, () => {
    const f = compilePropertyFilter({ key: 's', operator: 'regex', value: pattern }, { timezone: 'UTC' });
    const g = compilePropertyFilter({ key: 's', operator: 'not_regex', value: pattern }, { timezone: 'UTC' });
    assert.equal(f.test({ s: subject }, 0), expected);
    assert.equal(g.test({ s: subject }, 0), isValidRegex(pattern) ? !expected : false);
  });
}

test('accepted nested patterns stay fast on adversarial input', () => {
  const f = compilePropertyFilter({ key: 's', operator: 'regex', value: '^([a-z0-9-]+\\.)*posthog\\.com$' }, { timezone: 'UTC' });
  assert.equal(f.test({ s: 'a'.repeat(2000) + '!' }, 0), false);
  assert.equal(f.test({ s: 'ab.'.repeat(680) + '!' }, 0), false);
});

test('ReDoS patterns run in linear time on long adversarial subjects, with RE2 answers', () => {
  const cases: [pattern: string, subject: string, expected: boolean][] = [
    ['(\\w|\\d)+$', '1'.repeat(5_000) + '!', false],
    ['([a-z]|[a-z0-9])+@', 'a'.repeat(5_000) + '!', false],
    ['\\d*\\d*\\d*\\d*x', '1'.repeat(5_000), false],
    ['(a+)+$', 'a'.repeat(5_000) + '!', false],
    ['(a+)+$', 'a'.repeat(5_000), true],
    ['^(\\w+\\s?)*$', 'word '.repeat(1_600) + '!', false],
  ];
  for (const [pattern, subject, expected] of cases) {
    for (const operator of ['regex', 'not_regex']) {
      const f = compilePropertyFilter({ key: 's', operator, value: pattern }, { timezone: 'UTC' });
      assert.equal(f.test({ s: subject }, 0), operator === 'regex' ? expected : !expected, `${operator} ${pattern}`);
    }
  }
});

test('a backtracking-only pattern that runs out of time is false for both operators (fancy_regex limit error)', () => {
  // A lookahead sends the pattern to V8; the nested quantifier inside it is exponential there.
  const hay = { s: 'a'.repeat(40) + '!' };
  for (const operator of ['regex', 'not_regex']) {
    const f = compilePropertyFilter({ key: 's', operator, value: '^(?=(a+)+$)' }, { timezone: 'UTC' });
    assert.equal(f.test(hay, 0), false, operator);
  }
});
