/**
 * Semantic versions for the `semver_*` operators, following Rust `/flags`
 * (`rust/feature-flags/src/properties/property_matching.rs`: `to_semver_representation`,
 * `canonicalize_version_string`, the `SemverTilde/Caret/Wildcard` arm) and the Rust `semver`
 * crate (1.x) it delegates to: `Version::parse`, its total order, and `VersionReq` matching.
 * Research: posthog-flag-evaluation.md §3.3.
 *
 * Normalisation (Rust, in this order): string form of the value; strip one leading lower-case
 * `v`; trim whitespace; split off the first `-`/`+` suffix; strip leading zeros of all-digit
 * core components; pad the core to three components. Then strict SemVer 2.0 parsing: numbers up
 * to u64::MAX, pre-release identifiers without leading zeros, build identifiers of
 * `[0-9A-Za-z-]`. Numbers are kept as digit strings so u64 values compare exactly.
 *
 * Ordering is the crate's: major, minor, patch, then pre-release (a release is greater than any
 * of its pre-releases; numeric identifiers compare numerically and sort before alphanumeric
 * ones; a longer identifier list wins a tie), then build metadata (so `1.0.0+a != 1.0.0+b` for
 * `semver_eq`, as in Rust).
 */

/** A parsed version. `major/minor/patch` are canonical decimal strings (no leading zeros). */
export interface Version {
  readonly major: string;
  readonly minor: string;
  readonly patch: string;
  readonly pre: readonly string[];
  readonly build: readonly string[];
}

const U64_MAX = '18446744073709551615';
const NUMERIC_RE = /^(?:0|[1-9]\d*)$/;
const DIGITS_RE = /^\d+$/;
const IDENT_RE = /^[0-9A-Za-z-]+$/;

/** Compares two canonical decimal strings numerically. */
function cmpDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function u64(s: string): string | null {
  if (!NUMERIC_RE.test(s)) return null;
  if (s.length > 20 || (s.length === 20 && s > U64_MAX)) return null;
  return s;
}

/** Strips leading zeros of an all-digit component (`"08"` → `"8"`, `"000"` → `"0"`). */
export function stripLeadingZeros(part: string): string {
  if (part.length < 2 || part.charCodeAt(0) !== 48 || !DIGITS_RE.test(part)) return part;
  const t = part.replace(/^0+/, '');
  return t === '' ? '0' : t;
}

/** Rust `normalize_version_string`: strip one leading `v`, then trim. */
export function normalizeVersionString(s: string): string {
  return (s.charCodeAt(0) === 118 /* v */ ? s.slice(1) : s).trim();
}

/** Rust `canonicalize_version_string`: fix the numeric core, keep the `-`/`+` suffix. */
export function canonicalizeVersionString(s: string): string {
  let cut = -1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 45 || c === 43) { cut = i; break; }
  }
  const core = cut < 0 ? s : s.slice(0, cut);
  const suffix = cut < 0 ? '' : s.slice(cut);
  const parts = core.split('.').map(stripLeadingZeros);
  while (parts.length < 3) parts.push('0');
  return parts.join('.') + suffix;
}

function parsePre(s: string): string[] | null {
  const ids = s.split('.');
  for (const id of ids) {
    if (!IDENT_RE.test(id)) return null;
    if (id.length > 1 && id.charCodeAt(0) === 48 && DIGITS_RE.test(id)) return null; // leading zero
  }
  return ids;
}

function parseBuild(s: string): string[] | null {
  const ids = s.split('.');
  for (const id of ids) if (!IDENT_RE.test(id)) return null;
  return ids;
}

/** Strict SemVer parse (the crate's `Version::parse`), `null` when invalid. */
export function parseStrictVersion(s: string): Version | null {
  let rest = s;
  let build: string[] = [];
  const plus = rest.indexOf('+');
  if (plus >= 0) {
    const b = parseBuild(rest.slice(plus + 1));
    if (b === null) return null;
    build = b;
    rest = rest.slice(0, plus);
  }
  let pre: string[] = [];
  const dash = rest.indexOf('-');
  if (dash >= 0) {
    const p = parsePre(rest.slice(dash + 1));
    if (p === null) return null;
    pre = p;
    rest = rest.slice(0, dash);
  }
  const core = rest.split('.');
  if (core.length !== 3) return null;
  const major = u64(core[0]), minor = u64(core[1]), patch = u64(core[2]);
  if (major === null || minor === null || patch === null) return null;
  return { major, minor, patch, pre, build };
}

/**
 * Rust `to_semver_representation` applied to a string form: normalise, canonicalise, parse.
 * `null` when the result is not a valid version.
 *
 * Memoised: property values (app versions) repeat across flags and requests and a parse costs
 * ~0.7 µs. The map is cleared when full, bounding memory under many distinct values; results
 * are frozen so sharing them is safe.
 */
export function parseVersion(s: string): Version | null {
  const hit = versionCache.get(s);
  if (hit !== undefined) return hit;
  const v = parseStrictVersion(canonicalizeVersionString(normalizeVersionString(s)));
  if (v !== null) Object.freeze(v);
  if (versionCache.size >= VERSION_CACHE_MAX) versionCache.clear();
  versionCache.set(s, v);
  return v;
}

const VERSION_CACHE_MAX = 4096;
const versionCache = new Map<string, Version | null>();

function cmpIdentifiers(a: readonly string[], b: readonly string[], build: boolean): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i], y = b[i];
    const xn = DIGITS_RE.test(x), yn = DIGITS_RE.test(y);
    let c: number;
    if (xn && yn) {
      c = cmpDigits(stripLeadingZeros(x), stripLeadingZeros(y));
      // Build metadata may have leading zeros; the crate then orders the longer text last.
      if (c === 0 && build) c = x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
    } else if (xn !== yn) {
      c = xn ? -1 : 1;
    } else {
      c = x < y ? -1 : x > y ? 1 : 0;
    }
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Pre-release order: no pre-release sorts after any pre-release. */
function cmpPre(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 || b.length === 0) return a.length === b.length ? 0 : a.length === 0 ? 1 : -1;
  return cmpIdentifiers(a, b, false);
}

/** The crate's total order on versions (including build metadata); -1, 0 or 1. */
export function compareVersions(a: Version, b: Version): number {
  return cmpDigits(a.major, b.major) || cmpDigits(a.minor, b.minor) || cmpDigits(a.patch, b.patch)
    || cmpPre(a.pre, b.pre) || cmpIdentifiers(a.build, b.build, true);
}

// ---------------------------------------------------------------------------------------------
// Version requirements (the crate's `VersionReq`)

type Op = '=' | '>' | '>=' | '<' | '<=' | '~' | '^' | '*';

/** One comparator; `minor`/`patch` are `null` when omitted or wildcarded. */
interface Comparator {
  readonly op: Op;
  readonly major: string;
  readonly minor: string | null;
  readonly patch: string | null;
  readonly pre: readonly string[];
}

/** A parsed requirement: every comparator must match. An empty list (`*`) matches any release. */
export interface VersionReq {
  readonly comparators: readonly Comparator[];
}

const COMPARATOR_RE = /^(=|>=|>|<=|<|~|\^)? *([0-9]+|[*xX])(?:\.([0-9]+|[*xX]))?(?:\.([0-9]+|[*xX]))?(?:-([^+]*))?(?:\+(.*))?$/;

function isWild(s: string | undefined): boolean {
  return s === '*' || s === 'x' || s === 'X';
}

function parseComparator(text: string): Comparator | 'star' | null {
  const m = COMPARATOR_RE.exec(text);
  if (m === null) return null;
  const opText = m[1] as Op | undefined;
  const [maj, min, pat, preText, buildText] = [m[2], m[3], m[4], m[5], m[6]];
  if (buildText !== undefined && parseBuild(buildText) === null) return null;
  let pre: string[] = [];
  if (preText !== undefined) {
    const p = parsePre(preText);
    if (p === null) return null;
    pre = p;
  }
  if (isWild(maj)) {
    // The crate accepts a wildcard major only as the whole requirement (`*`, `x`, `X`): not
    // after an operator, not followed by anything (`*.*` is "unexpected after wildcard").
    if (opText !== undefined || min !== undefined || pat !== undefined || preText !== undefined || buildText !== undefined) return null;
    return 'star';
  }
  const major = u64(maj);
  if (major === null) return null;
  let minor: string | null = null, patch: string | null = null, wild = false;
  if (min !== undefined) {
    if (isWild(min)) wild = true; else if ((minor = u64(min)) === null) return null;
  }
  if (pat !== undefined) {
    if (isWild(pat)) wild = true;
    else if (wild || (patch = u64(pat)) === null) return null; // `1.*.3` is an error
  }
  if ((wild || patch === null) && preText !== undefined) return null; // pre-release needs a full version
  const op: Op = opText ?? (wild ? '*' : '^');
  return { op, major, minor, patch, pre };
}

/**
 * Parses a requirement such as `~1.2.3`, `^0.2`, `1.2.x`, `>=1.0, <2.0`, `*`; `null` when the
 * crate would reject it. A bare version means `^version` (the crate's default operator).
 */
export function parseVersionReq(text: string): VersionReq | null {
  const parts = text.split(',');
  const comparators: Comparator[] = [];
  for (const raw of parts) {
    const t = trimSpaces(raw); // the crate skips ASCII spaces only (not tabs)
    if (t === '') return null;
    const c = parseComparator(t);
    if (c === null) return null;
    if (c === 'star') { if (parts.length > 1) return null; continue; }
    comparators.push(c);
  }
  return { comparators };
}

function trimSpaces(s: string): string {
  let a = 0, b = s.length;
  while (a < b && s.charCodeAt(a) === 32) a++;
  while (b > a && s.charCodeAt(b - 1) === 32) b--;
  return s.slice(a, b);
}

function matchesExact(c: Comparator, v: Version): boolean {
  if (v.major !== c.major) return false;
  if (c.minor !== null && v.minor !== c.minor) return false;
  if (c.patch !== null && v.patch !== c.patch) return false;
  return cmpPre(v.pre, c.pre) === 0;
}

function matchesGreater(c: Comparator, v: Version): boolean {
  if (v.major !== c.major) return cmpDigits(v.major, c.major) > 0;
  if (c.minor === null) return false;
  if (v.minor !== c.minor) return cmpDigits(v.minor, c.minor) > 0;
  if (c.patch === null) return false;
  if (v.patch !== c.patch) return cmpDigits(v.patch, c.patch) > 0;
  return cmpPre(v.pre, c.pre) > 0;
}

function matchesLess(c: Comparator, v: Version): boolean {
  if (v.major !== c.major) return cmpDigits(v.major, c.major) < 0;
  if (c.minor === null) return false;
  if (v.minor !== c.minor) return cmpDigits(v.minor, c.minor) < 0;
  if (c.patch === null) return false;
  if (v.patch !== c.patch) return cmpDigits(v.patch, c.patch) < 0;
  return cmpPre(v.pre, c.pre) < 0;
}

function matchesTilde(c: Comparator, v: Version): boolean {
  if (v.major !== c.major) return false;
  if (c.minor !== null && v.minor !== c.minor) return false;
  if (c.patch !== null && v.patch !== c.patch) return cmpDigits(v.patch, c.patch) > 0;
  return cmpPre(v.pre, c.pre) >= 0;
}

function matchesCaret(c: Comparator, v: Version): boolean {
  if (v.major !== c.major) return false;
  if (c.minor === null) return true;
  if (c.patch === null) return c.major !== '0' ? cmpDigits(v.minor, c.minor) >= 0 : v.minor === c.minor;
  if (c.major !== '0') {
    if (v.minor !== c.minor) return cmpDigits(v.minor, c.minor) > 0;
    if (v.patch !== c.patch) return cmpDigits(v.patch, c.patch) > 0;
  } else if (c.minor !== '0') {
    if (v.minor !== c.minor) return false;
    if (v.patch !== c.patch) return cmpDigits(v.patch, c.patch) > 0;
  } else if (v.minor !== c.minor || v.patch !== c.patch) {
    return false;
  }
  return cmpPre(v.pre, c.pre) >= 0;
}

function matchesComparator(c: Comparator, v: Version): boolean {
  switch (c.op) {
    case '=': case '*': return matchesExact(c, v);
    case '>': return matchesGreater(c, v);
    case '>=': return matchesExact(c, v) || matchesGreater(c, v);
    case '<': return matchesLess(c, v);
    case '<=': return matchesExact(c, v) || matchesLess(c, v);
    case '~': return matchesTilde(c, v);
    case '^': return matchesCaret(c, v);
  }
}

/**
 * The crate's `VersionReq::matches`: every comparator matches, and a pre-release version only
 * matches when some comparator names the same `major.minor.patch` with a pre-release of its own
 * (so `*` and `1.x` never match `1.2.0-beta`).
 */
export function matchesReq(req: VersionReq, v: Version): boolean {
  const cs = req.comparators;
  for (let i = 0; i < cs.length; i++) if (!matchesComparator(cs[i], v)) return false;
  if (v.pre.length === 0) return true;
  for (let i = 0; i < cs.length; i++) {
    const c = cs[i];
    if (c.major === v.major && c.minor === v.minor && c.patch === v.patch && c.pre.length > 0) return true;
  }
  return false;
}

/**
 * The requirement a `semver_tilde` / `semver_caret` / `semver_wildcard` filter value stands for,
 * built as Rust does: `~` or `^` + the canonical version; for wildcard, the normalised text with
 * leading zeros stripped from every all-digit dot-separated part and `*` replaced by `x`.
 * `null` when the crate would reject the requirement.
 */
export function requirementFor(op: 'semver_tilde' | 'semver_caret' | 'semver_wildcard', filterText: string): VersionReq | null {
  const normalized = normalizeVersionString(filterText);
  switch (op) {
    case 'semver_tilde': return parseVersionReq('~' + canonicalizeVersionString(normalized));
    case 'semver_caret': return parseVersionReq('^' + canonicalizeVersionString(normalized));
    case 'semver_wildcard':
      return parseVersionReq(normalized.split('.').map(stripLeadingZeros).join('.').replace(/\*/g, 'x'));
  }
}
