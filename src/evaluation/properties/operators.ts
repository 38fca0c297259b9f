/**
 * Compiles one property-filter operator into a matcher, with Rust `/flags` semantics
 * (`rust/feature-flags/src/properties/property_matching.rs`, `match_property`, called with
 * `partial_props = false` and errors counted as false, as `flag_matching.rs` does;
 * research/posthog-flag-evaluation.md §3.2–§3.3).
 *
 * A compiled operator is a pair: `present(actual, nowMs)` for a key that exists (its value may be
 * JSON null, whose string form is `"null"`), and `missing`, the constant answer for an absent
 * key (§3.2: positive operators false; `is_not`, `not_icontains`, `not_starts_with`,
 * `not_ends_with`, `not_icontains_multi`, `not_regex`, `not_between` and `is_not_set` true).
 * A filter whose `value` is null or absent is false for every operator but `is_set` and
 * `is_not_set` (Rust returns before looking at the property).
 * `regex`, `not_regex`, `icontains` and `not_icontains` do not look into a value longer than
 * `MAX_MATCH_SUBJECT_CHARS` (src/limits.ts): false for both operators, as a match-time error.
 *
 * Everything that depends only on the filter (lower-cased needles, the regex, numbers, semvers,
 * absolute dates) is computed here once; `present` does no parsing of the filter.
 */
import { asciiLower, stringForm, toF64, unicodeLower } from './coerce.js';
import { parseAbsoluteDate, parseActualDate, parseRelativeDate, resolveRelativeDate } from './dates.js';
import type { Zone } from './calendar.js';
import { PropertyFilterError } from './errors.js';
import { compileRegex, regexSearch } from './regex.js';
import { MAX_MATCH_SUBJECT_CHARS } from '../../limits.js';
import { CLOCK_CHECK_CHARS, outOfBudget } from '../budget.js';
import {
  compareVersions, matchesReq, parseVersion, requirementFor, type Version, type VersionReq,
} from './semver.js';

/** Every operator name Rust's `OperatorType` accepts (serde snake_case names). */
export const PROPERTY_OPERATORS: readonly string[] = Object.freeze([
  'exact', 'is_not', 'is_set', 'is_not_set',
  'icontains', 'not_icontains', 'icontains_multi', 'not_icontains_multi',
  'starts_with', 'not_starts_with', 'ends_with', 'not_ends_with',
  'regex', 'not_regex',
  'gt', 'gte', 'lt', 'lte', 'between', 'not_between',
  'is_date_before', 'is_date_after', 'is_date_exact',
  'semver_eq', 'semver_neq', 'semver_gt', 'semver_gte', 'semver_lt', 'semver_lte',
  'semver_tilde', 'semver_caret', 'semver_wildcard',
  'in', 'not_in', 'flag_evaluates_to',
]);

const OPERATOR_SET: ReadonlySet<string> = new Set(PROPERTY_OPERATORS);

/** Whether `name` is one of {@link PROPERTY_OPERATORS}. */
export function isPropertyOperator(name: string): boolean {
  return OPERATOR_SET.has(name);
}

/** Answer for a key that is present; `actual` is never `undefined`. */
export type PresentMatcher = (actual: unknown, nowMs: number) => boolean;

/** A compiled operator (see the module doc). */
export interface CompiledOperator {
  readonly present: PresentMatcher;
  readonly missing: boolean;
}

/** Compile-time context. */
export interface OperatorContext {
  readonly zone: Zone;
  /** Throw {@link PropertyFilterError} where Rust only fails at match time (see errors.ts). */
  readonly strict: boolean;
  /** `property_matching_version` 2: explicit boolean equality for `exact` / `is_not` ({@link exactMatcherV2}). */
  readonly explicitBooleans?: boolean;
}

const alwaysFalse: PresentMatcher = () => false;
const alwaysTrue: PresentMatcher = () => true;
const FALSE: CompiledOperator = Object.freeze({ present: alwaysFalse, missing: false });

/** A Rust match-time error: constant `false` everywhere, or a throw under `strict`. */
function matchTimeError(ctx: OperatorContext, field: string, message: string, missing = false): CompiledOperator {
  if (ctx.strict) throw new PropertyFilterError(field, message);
  return missing ? { present: alwaysFalse, missing: true } : FALSE;
}

/**
 * Compiles `operator` (already validated as a name in {@link PROPERTY_OPERATORS}) against the
 * filter `value`. Throws {@link PropertyFilterError} only under `ctx.strict`.
 */
export function compileOperator(operator: string, value: unknown, ctx: OperatorContext): CompiledOperator {
  if (operator === 'is_set') return { present: alwaysTrue, missing: false };
  if (operator === 'is_not_set') return { present: alwaysFalse, missing: true };
  if (value === null || value === undefined) {
    if (operator === 'in' || operator === 'not_in' || operator === 'flag_evaluates_to') {
      return matchTimeError(ctx, 'operator', `operator ${operator} is only valid on ${operator === 'flag_evaluates_to' ? 'flag' : 'cohort'} filters`);
    }
    if (ctx.strict) throw new PropertyFilterError('value', `operator ${operator} needs a value`);
    return FALSE;
  }
  switch (operator) {
    case 'exact': return { present: (ctx.explicitBooleans ? exactMatcherV2 : exactMatcher)(value), missing: false };
    case 'is_not': {
      const eq = (ctx.explicitBooleans ? exactMatcherV2 : exactMatcher)(value);
      return { present: (a) => !eq(a, 0), missing: true };
    }
    case 'icontains': case 'not_icontains': {
      const needle = asciiLower(stringForm(value));
      const positive = operator === 'icontains';
      return { present: (a) => containsMatch(stringForm(a), needle, positive), missing: !positive };
    }
    case 'starts_with': case 'not_starts_with': {
      const needle = asciiLower(stringForm(value));
      const starts: PresentMatcher = (a) => asciiLower(stringForm(a)).startsWith(needle);
      return operator === 'starts_with' ? { present: starts, missing: false } : { present: (a) => !starts(a, 0), missing: true };
    }
    case 'ends_with': case 'not_ends_with': {
      const needle = asciiLower(stringForm(value));
      const ends: PresentMatcher = (a) => asciiLower(stringForm(a)).endsWith(needle);
      return operator === 'ends_with' ? { present: ends, missing: false } : { present: (a) => !ends(a, 0), missing: true };
    }
    case 'icontains_multi': case 'not_icontains_multi': {
      const needles = (Array.isArray(value) ? value : [value]).map((v) => asciiLower(stringForm(v)));
      const any: PresentMatcher = (a) => {
        const hay = asciiLower(stringForm(a));
        for (let i = 0; i < needles.length; i++) if (hay.includes(needles[i])) return true;
        return false;
      };
      return operator === 'icontains_multi' ? { present: any, missing: false } : { present: (a) => !any(a, 0), missing: true };
    }
    case 'regex': case 'not_regex': {
      const compiled = compileRegex(stringForm(value));
      const positive = operator === 'regex';
      if (compiled === null) {
        // Invalid pattern: false for both operators; a missing key still answers first.
        return matchTimeError(ctx, 'value', `invalid or unsupported regex ${JSON.stringify(stringForm(value))}`, !positive);
      }
      return {
        present: (a) => {
          const found = regexSearch(compiled, stringForm(a));
          return found === null ? false : found === positive;
        },
        missing: !positive,
      };
    }
    case 'gt': case 'gte': case 'lt': case 'lte': {
      const bound = toF64(value);
      if (bound === null) return matchTimeError(ctx, 'value', `filter value ${JSON.stringify(value)} is not a number`);
      return { present: numericMatcher(operator, bound), missing: false };
    }
    case 'between': case 'not_between': return compileBetween(operator, value, ctx);
    case 'is_date_before': case 'is_date_after': case 'is_date_exact': return compileDate(operator, value, ctx);
    case 'semver_eq': case 'semver_neq': case 'semver_gt': case 'semver_gte': case 'semver_lt': case 'semver_lte': {
      const target = parseVersion(stringForm(value));
      if (target === null) return matchTimeError(ctx, 'value', `filter value ${JSON.stringify(value)} is not a valid semver`);
      return { present: semverCompareMatcher(operator, target), missing: false };
    }
    case 'semver_tilde': case 'semver_caret': case 'semver_wildcard': {
      const req = requirementFor(operator, stringForm(value));
      if (req === null) return matchTimeError(ctx, 'value', `filter value ${JSON.stringify(value)} is not a valid semver requirement`);
      return { present: semverReqMatcher(req), missing: false };
    }
    case 'in': case 'not_in':
      return matchTimeError(ctx, 'operator', `operator ${operator} is only valid on cohort filters`);
    case 'flag_evaluates_to':
      return matchTimeError(ctx, 'operator', 'operator flag_evaluates_to is only valid on flag filters');
    default:
      throw new PropertyFilterError('operator', `unknown operator ${JSON.stringify(operator)}`);
  }
}

/**
 * `icontains` (`positive`) / `not_icontains` on a present value's string form: an ASCII
 * case-insensitive substring test. A value longer than {@link MAX_MATCH_SUBJECT_CHARS} is a
 * match-time error (false for both operators; src/limits.ts), and so is a long value met after
 * the request's evaluation budget ran out (budget.ts; the flag then fails anyway). The clock is
 * read only for values longer than {@link CLOCK_CHECK_CHARS}: short ones cost less than reading it.
 */
function containsMatch(subject: string, needle: string, positive: boolean): boolean {
  if (subject.length > CLOCK_CHECK_CHARS && (subject.length > MAX_MATCH_SUBJECT_CHARS || outOfBudget())) return false;
  return asciiLower(subject).includes(needle) === positive;
}

// ---------------------------------------------------------------------------------------------
// exact / is_not

/** Rust `is_truthy_or_falsy_property_value`: a bool, "true"/"false" in any case, or an array of those (even empty). */
function isBooleanLike(v: unknown): boolean {
  if (typeof v === 'boolean') return true;
  if (typeof v === 'string') return v.length === 4 || v.length === 5 ? isTrueText(v) || isFalseText(v) : false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!isBooleanLike(v[i])) return false;
    return true;
  }
  return false;
}

// Only ASCII letters lower-case to t/r/u/e/f/a/l/s, so length checks are safe before folding.
function isTrueText(s: string): boolean { return s.length === 4 && s.toLowerCase() === 'true'; }
function isFalseText(s: string): boolean { return s.length === 5 && s.toLowerCase() === 'false'; }

/** Rust `is_truthy_property_value`: `true`, "true" in any case, or an array all of whose elements are truthy. */
function isTruthy(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') return isTrueText(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!isTruthy(v[i])) return false;
    return true;
  }
  return false;
}

/**
 * `exact` for a present key: boolean handling first (truthiness compare), then any element of
 * an array filter, then a Unicode case-insensitive compare of the string forms.
 */
function exactMatcher(value: unknown): PresentMatcher {
  if (isBooleanLike(value)) {
    const want = isTruthy(value);
    return want ? (a) => isTruthy(a) : (a) => !isTruthy(a);
  }
  if (Array.isArray(value)) {
    const targets = new Set(value.map((v) => unicodeLower(stringForm(v))));
    return (a) => targets.has(unicodeLower(stringForm(a)));
  }
  const target = unicodeLower(stringForm(value));
  return (a) => unicodeLower(stringForm(a)) === target;
}

/** A bool or "true"/"false" in any case: the only values explicit boolean equality compares as booleans. */
function isBooleanScalar(v: unknown): boolean {
  return typeof v === 'boolean' || (typeof v === 'string' && (isTrueText(v) || isFalseText(v)));
}

/** One member of an exact filter against the actual value, under explicit boolean equality. */
function memberMatcherV2(member: unknown): PresentMatcher {
  if (isBooleanScalar(member)) {
    const want = isTruthy(member);
    const text = unicodeLower(stringForm(member));
    return (a) => (isBooleanScalar(a) ? isTruthy(a) === want : unicodeLower(stringForm(a)) === text);
  }
  const target = unicodeLower(stringForm(member));
  return (a) => unicodeLower(stringForm(a)) === target;
}

/**
 * `exact` under `property_matching_version` 2 ("explicit boolean equality", posthog-go's
 * matching-version table): a boolean filter matches only a boolean or "true"/"false" text of
 * the same truth (legacy read `false` as "anything not truthy", so `false` matched "banana",
 * 0, "" and null); a non-empty list matches when any member does, members compared the same
 * way; an empty list keeps the legacy reading (truthy actual); other values compare as
 * case-insensitive text, as before.
 */
function exactMatcherV2(value: unknown): PresentMatcher {
  if (Array.isArray(value)) {
    if (value.length === 0) return (a) => isTruthy(a);
    const members = value.map(memberMatcherV2);
    return (a, now) => members.some((m) => m(a, now));
  }
  return memberMatcherV2(value);
}

// ---------------------------------------------------------------------------------------------
// numbers

function numericMatcher(op: 'gt' | 'gte' | 'lt' | 'lte', bound: number): PresentMatcher {
  switch (op) {
    case 'gt': return (a) => { const n = toF64(a); return n !== null && n > bound; };
    case 'gte': return (a) => { const n = toF64(a); return n !== null && n >= bound; };
    case 'lt': return (a) => { const n = toF64(a); return n !== null && n < bound; };
    case 'lte': return (a) => { const n = toF64(a); return n !== null && n <= bound; };
  }
}

/**
 * `between` / `not_between`: `[min, max]`, inclusive, both parseable as f64, not NaN, min <= max.
 * A missing key answers first (between false, not_between true) even when the bounds are
 * malformed; a malformed bound, a non-numeric actual or a NaN actual is false for both.
 * (research §3.3 says a non-numeric actual makes `not_between` true; the Rust source read for
 * this module returns a validation error there, i.e. false, and its tests pin that: followed.)
 */
function compileBetween(op: 'between' | 'not_between', value: unknown, ctx: OperatorContext): CompiledOperator {
  const missing = op === 'not_between';
  if (!Array.isArray(value) || value.length !== 2) {
    return matchTimeError(ctx, 'value', `${op} needs a two-element array [min, max]`, missing);
  }
  const low = toF64(value[0]), high = toF64(value[1]);
  if (low === null || high === null || Number.isNaN(low) || Number.isNaN(high)) {
    return matchTimeError(ctx, 'value', `${op} bounds must be numbers`, missing);
  }
  if (low > high) return matchTimeError(ctx, 'value', `${op} needs min <= max`, missing);
  const inside = op === 'between';
  return {
    present: (a) => {
      const n = toF64(a);
      if (n === null || Number.isNaN(n)) return false;
      return (n >= low && n <= high) === inside;
    },
    missing,
  };
}

// ---------------------------------------------------------------------------------------------
// dates

/**
 * Date operators: the filter must be a string (else false); relative values are resolved per
 * call from `nowMs` (memoised for a repeated `nowMs`), absolute ones once here. Comparisons are
 * strict; `is_date_exact` means the same instant.
 */
function compileDate(op: 'is_date_before' | 'is_date_after' | 'is_date_exact', value: unknown, ctx: OperatorContext): CompiledOperator {
  if (typeof value !== 'string') return matchTimeError(ctx, 'value', `${op} needs a date string`);
  const zone = ctx.zone;
  const compare = op === 'is_date_before'
    ? (a: number, f: number) => a < f
    : op === 'is_date_after' ? (a: number, f: number) => a > f : (a: number, f: number) => a === f;
  const rel = parseRelativeDate(value);
  if (rel !== null) {
    let lastNow = NaN;
    let lastCutoff: number | null = null;
    return {
      present: (a, nowMs) => {
        const actual = parseActualDate(a, nowMs, zone);
        if (actual === null) return false;
        if (nowMs !== lastNow) { lastNow = nowMs; lastCutoff = resolveRelativeDate(rel, nowMs, zone); }
        return lastCutoff !== null && compare(actual, lastCutoff);
      },
      missing: false,
    };
  }
  const cutoff = parseAbsoluteDate(value, zone);
  if (cutoff === null) return matchTimeError(ctx, 'value', `unparseable date ${JSON.stringify(value)}`);
  return {
    present: (a, nowMs) => {
      const actual = parseActualDate(a, nowMs, zone);
      return actual !== null && compare(actual, cutoff);
    },
    missing: false,
  };
}

// ---------------------------------------------------------------------------------------------
// semver

function semverCompareMatcher(op: 'semver_eq' | 'semver_neq' | 'semver_gt' | 'semver_gte' | 'semver_lt' | 'semver_lte', target: Version): PresentMatcher {
  const test = op === 'semver_eq' ? (c: number) => c === 0
    : op === 'semver_neq' ? (c: number) => c !== 0
    : op === 'semver_gt' ? (c: number) => c > 0
    : op === 'semver_gte' ? (c: number) => c >= 0
    : op === 'semver_lt' ? (c: number) => c < 0
    : (c: number) => c <= 0;
  return (a) => {
    const v = parseVersion(stringForm(a));
    return v !== null && test(compareVersions(v, target));
  };
}

function semverReqMatcher(req: VersionReq): PresentMatcher {
  return (a) => {
    const v = parseVersion(stringForm(a));
    return v !== null && matchesReq(req, v);
  };
}
