/**
 * `regex` / `not_regex` patterns: translate Rust `fancy_regex` syntax into a JavaScript `RegExp`
 * once, at compile time. Source: Rust `rust/feature-flags/src/properties/property_matching.rs`
 * (patterns built with `fancy_regex::RegexBuilder`, backtrack limit 10,000; a build error or a
 * limit error makes both `regex` and `not_regex` false) and research/posthog-flag-evaluation.md
 * §3.3 "regex".
 *
 * Translation, into a JS pattern with the `u` flag (code-point semantics and Unicode property
 * escapes, as Rust):
 * - leading inline flag groups `(?i)`, `(?m)`, `(?s)`, `(?x)`, `(?U)`, `(?u)` (and `(?-u)` …)
 *   become JS flags or are applied by the translator (`x`: whitespace and `#` comments dropped;
 *   `U`: greedy and lazy swapped; `-u`: ASCII classes); `R` is accepted and ignored;
 * - Unicode classes as Rust defines them: `\d` → `\p{Nd}`, `\s` → `\p{White_Space}`,
 *   `\w` → Alphabetic + Mark + Nd + Pc + Join_Control, `\b`/`\B` → lookarounds over that `\w`;
 *   `\pL`, `\p{Greek}`, `\p{sc=Greek}`, `\p{^L}`, `\P{…}` → JS property escapes (a bare script
 *   name means Script_Extensions);
 * - `.` becomes `[^\n]` (Rust excludes only `\n`; JS also excludes `\r`, U+2028, U+2029), or
 *   `[^]` under `s`;
 * - `\A` → start of text, `\z` → end of text, `(?P<n>…)` → `(?<n>…)`, `(?P=n)` → `\k<n>`,
 *   `\x{…}`/`\u{…}`/`\uHHHH`/`\U{…}`/`\UHHHHHHHH` → `\u{…}`, `{,n}` → `{0,n}`, POSIX classes
 *   `[[:alpha:]]` → ASCII ranges; Rust's escapes of any ASCII punctuation (`\-`, `\#`, `\@`)
 *   become the literal character where the `u` flag forbids the escape.
 *
 * Unsupported (the pattern counts as invalid: both operators give false, and
 * {@link isValidRegex} says false; Rust would accept them): inline flags anywhere but the very
 * start, scoped flag groups `(?i:…)`, nested classes and class set operations (`&&`, `--`,
 * `~~`), negated POSIX classes, `\W` inside a class, atomic groups, possessive quantifiers,
 * `\<`, `\>`, `\b{…}`, `\K`, `\Z`, Unicode property names JS does not know verbatim (Rust also
 * accepts loose spellings such as `\p{letter}` or `\p{ Greek }`).
 *
 * Dialect gaps that remain: `(?i)` uses JS's simple case folding (Rust: simple case folding
 * too, so differences are limited to Unicode-version skew); under `(?m)`, JS `^`/`$` also treat
 * `\r`, U+2028 and U+2029 as line ends; fancy_regex rejects some lookbehinds JS accepts
 * (variable length).
 *
 * Backtracking guard: V8 has no backtrack limit, while Rust runs plain patterns on the linear
 * `regex` crate and fancy ones under a 10,000-step limit. Two guards here:
 * - an unbounded quantifier applied to a group that itself holds an unbounded quantifier is
 *   refused as unsupported unless every unbounded atom inside the group is followed by a
 *   mandatory literal it cannot match (a separator, after it or starting the next iteration):
 *   `([a-z0-9-]+\.)*posthog\.com` and `\w+(\.\w+)*@` are accepted,
 *   while `(a+)+`, `(\w+\s?)*`, `(\w+\d+)*`, `(?:[a-z]+|[0-9]+)*` and deeper nesting are
 *   refused. V8 is exponential on the refused shapes (measured: `(?:[a-z]+|[a-z0-9]+)*@` takes
 *   5 s on 16 characters) and no subject-length cap small enough to be safe would leave them
 *   useful. Rust would accept and evaluate them; {@link describeRegexProblem} says why.
 *   Ambiguity without nested quantifiers (`(a|aa)*b`) is not detected;
 * - a subject longer than {@link MAX_REGEX_SUBJECT_LENGTH} UTF-16 units is treated like Rust's
 *   limit error: no match for either operator. Even plain patterns are quadratic in V8 when
 *   unanchored (measured: `\w+@` on 10,000 letters takes ~200 ms, on 2,048 ~5 ms), so the cap
 *   is sized for URLs and e-mails, not for documents. It bounds, but does not remove,
 *   polynomial blow-ups such as `.*a.*a.*b`. A linear-time engine would remove both gaps.
 */

import { Translator } from './regex-translate.js';

/** Subjects longer than this (UTF-16 code units) never match (`regex` and `not_regex` false). */
export const MAX_REGEX_SUBJECT_LENGTH = 2048;

/** A pattern compiled once. */
export interface CompiledRegex {
  readonly regex: RegExp;
  /** The longest subject tested; longer subjects count as a limit error (false). */
  readonly maxSubjectLength: number;
}

/**
 * Translates and compiles a Rust-syntax pattern once. `null` when the pattern is invalid in Rust
 * or uses syntax this module does not translate (see the module doc); both mean "no match for
 * `regex` and `not_regex`".
 */
export function compileRegex(pattern: string): CompiledRegex | null {
  return compileOrExplain(pattern).compiled;
}

function compileOrExplain(pattern: string): { compiled: CompiledRegex | null; problem: string | null } {
  try {
    const { source, flags } = new Translator(pattern).translate();
    return { compiled: { regex: new RegExp(source, flags), maxSubjectLength: MAX_REGEX_SUBJECT_LENGTH }, problem: null };
  } catch (e) {
    return { compiled: null, problem: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Whether a pattern compiles here (Rust syntax, within the supported subset). The control
 * plane's validator uses it to reject patterns on write.
 */
export function isValidRegex(pattern: string): boolean {
  return compileRegex(pattern) !== null;
}

/**
 * Why a pattern does not compile here (a short English reason, for validation messages), or
 * `null` when it compiles.
 */
export function describeRegexProblem(pattern: string): string | null {
  return compileOrExplain(pattern).problem;
}

/**
 * Unanchored, case-sensitive (unless `(?i)`) search, as Rust's `Regex::find(..).is_some()`.
 * A subject over the length cap answers `null` (Rust's limit error; both operators false).
 */
export function regexSearch(compiled: CompiledRegex, subject: string): boolean | null {
  if (subject.length > compiled.maxSubjectLength) return null;
  return compiled.regex.test(subject);
}
