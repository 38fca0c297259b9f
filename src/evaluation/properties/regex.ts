/**
 * `regex` / `not_regex` patterns, evaluated without ever stalling. Sources:
 * Rust `rust/feature-flags/src/properties/property_matching.rs` (patterns built with
 * fancy_regex, backtrack limit 10,000; a build error or a limit error makes both `regex` and
 * `not_regex` false) and research/posthog-flag-evaluation.md §3.3 "regex": an unanchored search.
 *
 * Two engines, chosen once per pattern at compile time, as fancy_regex itself does (it hands
 * plain patterns to the linear `regex` crate and runs only fancy ones by backtracking):
 * - plain patterns (nearly all) are translated to RE2 syntax (regex-translate.ts) and run by
 *   re2js, a pure-JS RE2 whose automata never backtrack: time is linear in pattern × subject,
 *   so no pattern can backtrack (V8 froze a node 3 s on `(\w|\d)+$` and 29 characters). Linear
 *   still has a constant: a program is refused above {@link MAX_REGEX_PROGRAM_UNITS} (see
 *   {@link programUnits}; `(?i)\w{1,1000}!` cost seconds per 10 KB), as Rust's `size_limit` refuses
 *   it at build time; one estimated far above it (regex-size.ts) is refused before compiling, so
 *   refusing never costs the compile of a huge program;
 * - patterns only a backtracking engine runs (lookahead, lookbehind, backreferences, and Unicode
 *   properties RE2 cannot express), and patterns with `\b`/`\B` on a non-ASCII subject (RE2's
 *   word boundary is ASCII, Rust's Unicode), are translated to JS (regex-translate-js.ts) and
 *   run by V8 inside a `node:vm` context with a {@link BACKTRACK_TIMEOUT_MS} time limit, the
 *   stand-in for fancy_regex's backtrack limit: a search that runs out answers as Rust's limit
 *   error does (false for both operators). Costs ~0.15 ms per search (the watchdog thread),
 *   paid only by those patterns. The time limit shrinks to what is left of the request's
 *   evaluation budget (budget.ts); a search cut short by the budget marks the budget spent.
 *
 * Subjects longer than {@link MAX_MATCH_SUBJECT_CHARS} are not searched: both operators answer
 * false, as for Rust's limit error (src/limits.ts gives the rationale).
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
import { MAX_MATCH_SUBJECT_CHARS, MAX_REGEX_PROGRAM_UNITS } from '../../limits.js';
import { markSpent, remainingMs } from '../budget.js';
import { Translator } from './regex-translate.js';
import { BacktrackingTranslator } from './regex-translate-js.js';
import { estimateProgramUnits } from './regex-size.js';

/**
 * Longest one backtracking search may run, in milliseconds (then: no match for either
 * operator). Patterns are written by project admins; the subject is public input, so this
 * bounds what one request can cost with the worst admin pattern. Generous enough that a sound
 * search on a busy machine never hits it (a time limit is noisier than fancy_regex's step limit).
 */
export const BACKTRACK_TIMEOUT_MS = 50;

/**
 * A backtracking search stopped by {@link BACKTRACK_TIMEOUT_MS} is run again when the
 * process spent less than this fraction of the limit in CPU meanwhile: the limit is wall time
 * (node:vm's watchdog), so a thread descheduled on an overloaded machine, or a process stopped
 * and resumed, ran out of time without searching, which would answer a false no-match. A search
 * that really runs to the limit spends about all of it in CPU and is not run again.
 */
export const STARVED_CPU_FRACTION = 0.5;
/**
 * Most times a starved search is run again ({@link STARVED_CPU_FRACTION}). A starved run costs
 * wall time, not CPU, and a request's evaluation budget bounds that wall time anyway.
 */
const MAX_STARVED_RERUNS = 2;

/** A pattern compiled once. */
export interface CompiledRegex {
  /** The RE2 program, when RE2 runs the pattern. */
  readonly re2: RE2JS | null;
  /** The V8 program, when the pattern needs it (see the module doc). */
  readonly backtracking: RegExp | null;
  /** The pattern has `\b`/`\B`: a non-ASCII subject goes to the backtracking program. */
  readonly boundaries: boolean;
}

/**
 * A compile over the estimate of {@link estimateProgramUnits} past this many times
 * {@link MAX_REGEX_PROGRAM_UNITS} is refused without compiling: the estimate is within 0.75–1.6×
 * of the compiled size (regex-size.ts), so no pattern under the bound is refused by it, and a
 * compile that is tried costs at most a program of about 2.7× the bound. At 4× the bound, a
 * pattern such as `(?i)\w{1,1000}!` (800,002 units) was compiled only to be refused: 45–190 ms of
 * a control plane's event loop warm and about 300 ms cold, at each save, for every project.
 */
const ESTIMATE_REFUSAL_FACTOR = 2;

/** Most small sources whose compile result {@link re2Compiles} remembers (property names the translator checks). */
const MAX_CACHED_CHECKS = 512;
const checked = new Map<string, boolean>();

/**
 * Whether re2js compiles an RE2 source (the translator checks property names with it, once per
 * occurrence: remembered, so a pattern repeating `\p{L}` thousands of times compiles it once).
 */
function re2Compiles(source: string): boolean {
  let ok = checked.get(source);
  if (ok === undefined) {
    try { RE2JS.compile(source); ok = true; } catch { ok = false; }
    if (checked.size >= MAX_CACHED_CHECKS) checked.clear();
    checked.set(source, ok);
  }
  return ok;
}

/**
 * Translates and compiles a Rust-syntax pattern once. `null` when the pattern is invalid in Rust
 * or uses syntax neither engine runs (see the module doc); both mean "no match for `regex` and
 * `not_regex`".
 */
export function compileRegex(pattern: string): CompiledRegex | null {
  return compileOrExplain(pattern).compiled;
}

/** re2js internals read by {@link programUnits} (not in its typings; checked at run time). */
interface Re2Internals { re2Input?: { prog?: { inst?: ArrayLike<{ runes?: ArrayLike<number> }> } } }

/**
 * Size of a compiled RE2 program in program units: one per instruction plus one per range of
 * each character class an instruction tests (a class is stored as `[lo, hi]` pairs). Counting
 * ranges makes `\w` (about 800 ranges in Unicode) weigh what it costs, as Rust's `size_limit`
 * counts the bytes of its UTF-8 automata. Falls back to re2js's public instruction count if its
 * internals ever change shape (then only instructions are counted).
 */
export function programUnits(re: RE2JS): number {
  const inst = (re as unknown as Re2Internals).re2Input?.prog?.inst;
  if (inst === undefined || typeof inst.length !== 'number') return re.programSize();
  let units = 0;
  for (let i = 0; i < inst.length; i++) units += 1 + ((inst[i]!.runes?.length ?? 0) >> 1);
  return units;
}

function compileOrExplain(pattern: string): { compiled: CompiledRegex | null; problem: string | null } {
  let re2: RE2JS | null = null;
  let boundaries = false;
  let problem: string | null = null;
  try {
    const t = new Translator(pattern, re2Compiles);
    const source = t.translate();
    const estimate = estimateProgramUnits(source, programUnits);
    if (estimate > ESTIMATE_REFUSAL_FACTOR * MAX_REGEX_PROGRAM_UNITS) {
      return { compiled: null, problem: `the compiled pattern is too large (about ${estimate} program units, more than ${MAX_REGEX_PROGRAM_UNITS})` };
    }
    const program = RE2JS.compile(source);
    const units = programUnits(program);
    if (units > MAX_REGEX_PROGRAM_UNITS) {
      // Too large for either engine: the backtracking one would run the same blow-up, slower.
      return { compiled: null, problem: `the compiled pattern is too large (${units} program units, more than ${MAX_REGEX_PROGRAM_UNITS})` };
    }
    re2 = program;
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
 * Unanchored search, as Rust's `Regex::find(..).is_some()`. `null` (Rust's limit error: both
 * operators false) when the subject is longer than {@link MAX_MATCH_SUBJECT_CHARS}, when the
 * request's evaluation budget is already spent, or when a backtracking search ran out of time;
 * that time is min({@link BACKTRACK_TIMEOUT_MS}, budget left), and a search stopped by the
 * budget marks it spent (budget.ts). A search stopped by the time limit without having had the
 * CPU to search ({@link STARVED_CPU_FRACTION}) runs again, up to twice, each time within what
 * is left of the budget.
 */
export function regexSearch(compiled: CompiledRegex, subject: string): boolean | null {
  if (subject.length > MAX_MATCH_SUBJECT_CHARS) return null;
  const firstLeft = remainingMs();
  if (firstLeft === 0) return null;
  if (compiled.re2 !== null && !(compiled.boundaries && !ASCII.test(subject))) return compiled.re2.test(subject);
  const box = sandbox as { r?: RegExp; s?: string };
  box.r = compiled.backtracking!;
  box.s = subject;
  try {
    for (let attempt = 0, left = firstLeft; ; attempt++, left = remainingMs()) {
      if (left === 0) return null;
      const byBudget = left < BACKTRACK_TIMEOUT_MS;
      const before = process.cpuUsage();
      try {
        // vm wants a positive integer; rounding up overruns the budget by under 1 ms.
        return search.runInContext(sandbox, { timeout: byBudget ? Math.ceil(left) : BACKTRACK_TIMEOUT_MS }) as boolean;
      } catch {
        if (byBudget) {
          markSpent();
          return null;
        }
        const used = process.cpuUsage(before);
        const starved = (used.user + used.system) / 1000 < STARVED_CPU_FRACTION * BACKTRACK_TIMEOUT_MS;
        if (attempt >= MAX_STARVED_RERUNS || !starved) return null;
      }
    }
  } finally {
    box.r = undefined;
    box.s = undefined;
  }
}
