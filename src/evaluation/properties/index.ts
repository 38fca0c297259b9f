/**
 * Property filters of the evaluation core: compile a stored filter once, then test property maps
 * with it millions of times.
 *
 * Semantics are Rust `/flags`'s (`rust/feature-flags/src/properties/property_matching.rs`,
 * `relative_date.rs`), as research/posthog-flag-evaluation.md §3.2, §3.3 and §8 prescribe; where
 * posthog-node or posthog-python differ (missing keys inconclusive, no boolean handling in
 * `exact`, string comparison in `gt`, ms timestamps, pre-release-blind semver, …) this module
 * follows Rust. Matching is evaluated with Rust's `partial_props = false` and a match-time error
 * counts as `false`, as `flag_matching.rs` does with `.unwrap_or(false)`.
 *
 * Errors: {@link compilePropertyFilter} throws {@link PropertyFilterError} only where Rust fails
 * to deserialise the filter (unknown operator, bad key/type/group_type_index). What Rust only
 * meets at match time (malformed `between` bounds, invalid semver/date/regex filter values,
 * `in`/`not_in`/`flag_evaluates_to` on a plain property) compiles to Rust's answer (`false`,
 * or the negated operator's missing-key `true`) unless `strict: true` is passed, which the
 * control plane's validator uses to reject such filters on write.
 *
 * Known gaps vs Rust, each documented in its file:
 * - numbers: JS cannot tell `1.0` from `1` after `JSON.parse`; object keys keep insertion order
 *   where serde_json sorts them (`coerce.ts`);
 * - regex: RE2 (re2js) and, for lookaround/backreferences, a time-limited JS `RegExp` stand in
 *   for `fancy_regex`; some syntax and oversized programs are refused, and values longer than
 *   `MAX_MATCH_SUBJECT_CHARS` are not searched (`regex.ts`, src/limits.ts);
 * - dates: only a subset of the `dateparser` fallback formats (`dates.ts`).
 *
 * Layout: `coerce.ts` (string forms, f64, case folding), `regex.ts`, `dates.ts`, `semver.ts`,
 * `operators.ts` (one compiled matcher per operator), `errors.ts`; this file is the public API.
 */
import { compileOperator, isPropertyOperator } from './operators.js';
import { PropertyFilterError } from './errors.js';
import { resolveZone, UTC_ZONE } from './calendar.js';

export { PropertyFilterError } from './errors.js';
export { PROPERTY_OPERATORS, isPropertyOperator } from './operators.js';
export { parseFilterDate } from './dates.js';
export { isValidRegex, describeRegexProblem } from './regex.js';

/** A property filter as stored in `filters.groups[*].properties` (research §1). */
export interface PropertyFilter {
  key: string;
  value?: unknown;
  /** Defaults to `exact` when null or absent. */
  operator?: string | null;
  /** `person` (default), `group`, `cohort`, `flag`, `person_metadata`, … */
  type?: string;
  group_type_index?: number | null;
  /** Cohort-definition leaves only; not applied here (the cohort evaluator flips the result). */
  negation?: boolean;
}

/**
 * Rust `PERSON_METADATA_KEY_PREFIX` (`property_matching.rs`): a `person_metadata` filter (e.g.
 * key `created_at`) reads the persons-table column, which the evaluator stores in the person
 * property map under this prefix so user-set properties of the same name cannot shadow it.
 */
export const PERSON_METADATA_KEY_PREFIX = '__posthog_person_metadata__';

/**
 * The property-map key a filter reads (Rust `lookup_key_for`): `key` itself, or
 * {@link PERSON_METADATA_KEY_PREFIX} + `key` for `type: "person_metadata"`.
 */
export function propertyLookupKey(key: string, type: string | undefined): string {
  return type === 'person_metadata' ? PERSON_METADATA_KEY_PREFIX + key : key;
}

/** A filter compiled once; {@link CompiledPropertyFilter.test} is the hot path. */
export interface CompiledPropertyFilter {
  readonly key: string;
  /** The map key {@link test} reads: `key`, prefixed for `person_metadata` ({@link propertyLookupKey}). */
  readonly lookupKey: string;
  /** `person` (default) | `group` | … as given; routing is the caller's job (research §3.1). */
  readonly type: string;
  readonly groupTypeIndex: number | null;
  /**
   * Whether `properties` match, reading `properties[lookupKey]`. A key counts as present when it
   * is an own property whose value is not `undefined` (JSON null is present; research §3.2).
   * `nowMs` (ms since the epoch) anchors relative dates. Never throws.
   */
  test(properties: Readonly<Record<string, unknown>>, nowMs: number): boolean;
}

/** Options of {@link compilePropertyFilter}. */
export interface CompileOptions {
  /** The team's IANA timezone; naive and relative dates are read in it. Unknown names mean UTC. */
  timezone: string;
  /**
   * Also throw where Rust only fails at match time (malformed `between` bounds, invalid semver,
   * date or regex filter values, `in`/`not_in`/`flag_evaluates_to`, a null `value`). For the
   * control plane's validator; evaluation leaves it off to answer exactly as Rust does.
   */
  strict?: boolean;
  /**
   * The project's `property_matching_version` (the local-evaluation feed's field, a team
   * setting in PostHog): 2 selects explicit boolean equality for `exact` / `is_not`
   * (operators.ts); anything else is the legacy (Rust) matching.
   */
  matchingVersion?: number;
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * Compiles a property filter. Throws {@link PropertyFilterError} where Rust fails to parse the
 * filter: non-string `key` (field `key`), unknown or non-string `operator` (field `operator`),
 * non-integer `group_type_index`, non-string `type`; with `strict`, also for match-time errors
 * (see {@link CompileOptions.strict}). `type` itself is not checked against a list (routing is
 * the caller's job); `person_metadata` changes the key read ({@link propertyLookupKey}).
 */
export function compilePropertyFilter(filter: PropertyFilter, opts: CompileOptions): CompiledPropertyFilter {
  if (filter === null || typeof filter !== 'object') throw new PropertyFilterError('filter', 'a property filter must be an object');
  const key = filter.key;
  if (typeof key !== 'string') throw new PropertyFilterError('key', 'key must be a string');
  const rawOp = filter.operator;
  const operator = rawOp === null || rawOp === undefined ? 'exact' : rawOp;
  if (typeof operator !== 'string' || !isPropertyOperator(operator)) {
    throw new PropertyFilterError('operator', `unknown operator ${JSON.stringify(operator)}`);
  }
  const zone = resolveZone(opts.timezone);
  if (zone === null && opts.strict) throw new PropertyFilterError('timezone', `unknown timezone ${JSON.stringify(opts.timezone)}`);
  const { present, missing } = compileOperator(operator, filter.value, { zone: zone ?? UTC_ZONE, strict: opts.strict === true, explicitBooleans: opts.matchingVersion === 2 });
  const gti = filter.group_type_index;
  if (gti !== undefined && gti !== null && !Number.isInteger(gti)) {
    throw new PropertyFilterError('group_type_index', 'group_type_index must be an integer or null');
  }
  const rawType = filter.type;
  if (rawType !== undefined && rawType !== null && typeof rawType !== 'string') {
    throw new PropertyFilterError('type', 'type must be a string');
  }
  const type = typeof rawType === 'string' ? rawType : 'person';
  const lookupKey = propertyLookupKey(key, type);
  return Object.freeze({
    key,
    lookupKey,
    type,
    groupTypeIndex: typeof gti === 'number' ? gti : null,
    test(properties: Readonly<Record<string, unknown>>, nowMs: number): boolean {
      if (!hasOwn.call(properties, lookupKey)) return missing;
      const actual = properties[lookupKey];
      return actual === undefined ? missing : present(actual, nowMs);
    },
  });
}
