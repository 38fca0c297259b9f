/**
 * `regex` / `not_regex` patterns, evaluated without ever stalling (issue 8 item 3). Sources:
 * Rust `rust/feature-flags/src/properties/property_matching.rs` (patterns built with
 * fancy_regex, backtrack limit 10,000; a build error or a limit error makes both `regex` and
 * `not_regex` false) and research/posthog-flag-evaluation.md §3.3 "regex": an unanchored search.
 *
 * Two engines, chosen once per pattern at compile time, as fancy_regex itself does (it hands
 * plain patterns to the linear `regex` crate and runs only fancy ones by backtracking):
 * - plain patterns (nearly all) are translated to RE2 syntax (regex-translate.ts) and run by
 *   re2js, a pure-JS RE2 whose automata never backtrack: time is linear in pattern × subject,
 *   so no pattern and no subject can stall evaluation (V8 froze a node 3 s on `(\w|\d)+$` and
 *   29 characters). No subject-length cap and no pattern-shape refusal are needed;
 * - patterns only a backtracking engine runs (lookahead, lookbehind, backreferences, and Unicode
 *   properties RE2 cannot express), and patterns with `\b`/`\B` on a non-ASCII subject (RE2's
 *   word boundary is ASCII, Rust's Unicode), are translated to JS (regex-translate-js.ts) and
 *   run by V8 inside a `node:vm` context with a {@link BACKTRACK_TIMEOUT_MS} time limit, the
 *   stand-in for fancy_regex's backtrack limit: a search that runs out answers as Rust's limit
 *   error does (false for both operators). Costs ~0.15 ms per search (the watchdog thread),
 *   paid only by those patterns.
 *
 * Dialect (both engines): leading inline flags `(?i)`, `(?m)`, `(?s)`, `(?x)`, `(?U)`, `(?u)`/
 * `(?-u)` (`R` ignored); Unicode `\d`, `\s`, `\w`, `\b`; `\pL`, `\p{Greek}`, `\p{sc=Greek}`,
 * `\p{gc:Lu}`, `\p{^L}`, `\P{…}`; `.` excludes only `\n`; `\A`, `\z`, `(?P<n>…)`, `(?P=n)`,
 * `\x{…}`/`\u{…}`/`\uHHHH`/`\U{…}`/`\UHHHHHHHH`, `{,n}`, POSIX classes, escaped ASCII punctuation.
 * Refused (invalid: 400 with `attr` on write, false at evaluation): inline flags anywhere but
 * the very start, scoped flag groups `(?i:…)`, nested classes and class set operations,
 * negated POSIX classes, `\W` inside a class, atomic groups, possessive quantifiers, `\<`,
 * `\>`, `\b{…}`, `\K`, `\Z`, Unicode property names neither engine knows verbatim.
 *
 * Dialect gaps: `\p{Greek}` is the Script property under RE2 (Rust: Script_Extensions); RE2's
 * `\w` misses the few Other_Alphabetic code points outside the M categories; `(?i)` case
 * folding may differ by Unicode version.
 */

import vm from 'node:vm';
import { RE2JS } from 're2js';
import { Translator } from './regex-translate.js';
import { BacktrackingTranslator } from './regex-translate-js.js';

/**
 * Longest one backtracking search may run, in milliseconds (then: no match for either
 * operator). Patterns are written by project admins; the subject is public input, so this
 * bounds what one request can cost with the worst admin pattern. Generous enough that a sound
 * search on a busy machine never hits it (a time limit is noisier than fancy_regex's step limit).
 */
export const BACKTRACK_TIMEOUT_MS = 50;

/** A pattern compiled once. */
export interface CompiledRegex {
  /** The RE2 program, when RE2 runs the pattern. */
  readonly re2: RE2JS | null;
  /** The V8 program, when the pattern needs it (see the module doc). */
  readonly backtracking: RegExp | null;
  /** The pattern has `\b`/`\B`: a non-ASCII subject goes to the backtracking program. */
  readonly boundaries: boolean;
}

/** Whether re2js compiles an RE2 source (the translator checks property names with it). */
function re2Compiles(source: string): boolean {
  try { RE2JS.compile(source); return true; } catch { return false; }
}

/**
 * Translates and compiles a Rust-syntax pattern once. `null` when the pattern is invalid in Rust
 * or uses syntax neither engine runs (see the module doc); both mean "no match for `regex` and
 * `not_regex`".
 */
export function compileRegex(pattern: string): CompiledRegex | null {
  return compileOrExplain(pattern).compiled;
}

function compileOrExplain(pattern: string): { compiled: CompiledRegex | null; problem: string | null } {
  let re2: RE2JS | null = null;
  let boundaries = false;
  let problem: string | null = null;
  try {
    const t = new Translator(pattern, re2Compiles);
    re2 = RE2JS.compile(t.translate());
    boundaries = t.boundaries;
  } catch (e) {
    problem = e instanceof Error ? e.message : String(e);
  }
  let backtracking: RegExp | null = null;
  if (re2 === null || boundaries) {
    try {
      const { source, flags } = new BacktrackingTranslator(pattern).translate();
      backtracking = new RegExp(source, flags);
      backtracking.test(''); // V8 compiles a RegExp on first use: pay that here, not inside the time limit
    } catch (e) {
      if (re2 === null) return { compiled: null, problem: e instanceof Error ? e.message : String(e) };
    }
  }
  return { compiled: { re2, backtracking, boundaries: boundaries && backtracking !== null }, problem: re2 === null && backtracking === null ? problem : null };
}

/**
 * Whether a pattern compiles here (Rust syntax, within what the two engines run). The control
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

const ASCII = /^[\x00-\x7f]*$/;
const sandbox = vm.createContext(Object.create(null) as object);
const search = new vm.Script('r.test(s)');

/**
 * Unanchored search, as Rust's `Regex::find(..).is_some()`. `null` when a backtracking search
 * ran out of time (Rust's limit error: both operators false).
 */
export function regexSearch(compiled: CompiledRegex, subject: string): boolean | null {
  if (compiled.re2 !== null && !(compiled.boundaries && !ASCII.test(subject))) return compiled.re2.test(subject);
  const box = sandbox as { r?: RegExp; s?: string };
  box.r = compiled.backtracking!;
  box.s = subject;
  try {
    return search.runInContext(sandbox, { timeout: BACKTRACK_TIMEOUT_MS }) as boolean;
  } catch {
    return null;
  } finally {
    box.r = undefined;
    box.s = undefined;
  }
}
