/**
 * Value coercions shared by the property operators: the "string form" of a JSON value, Rust's
 * `f64` parse, and the two case foldings (Unicode for `exact`, ASCII for the substring family).
 *
 * Source: Rust `rust/feature-flags/src/properties/property_matching.rs`
 * (`to_string_representation`, `to_f64_representation`), research/posthog-flag-evaluation.md §3.3
 * "String form used for comparisons" and §8 "Numbers as strings".
 *
 * Known gap (documented, not fixable after `JSON.parse`): JavaScript cannot tell the JSON text
 * `1.0` from `1`, so a property or filter value written as `1.0` has the string form `"1"` here
 * while Rust's serde_json keeps `"1.0"`. Integral numbers are formatted as JSON integers (what
 * serde_json does for integer literals that fit u64/i64); all other numbers use the shortest
 * round-trip digits laid out the way Rust's `ryu` does (`1e-7`, `1e21`, `2.5e-6`, `0.5`).
 * Integers above 2^53 have already lost precision in `JSON.parse`. Object keys keep their
 * insertion order in `JSON.stringify`, while serde_json (without `preserve_order`) sorts them.
 */

const U64_LIMIT = 18446744073709551616; // 2^64: integral values below this print as integers
const I64_MIN = -9223372036854775808; // -2^63

/**
 * The JSON text of a finite number as serde_json would print it: integers as integers, other
 * values in ryu's layout (scientific when the decimal exponent is < -5 or > 16, no `+` sign).
 * Non-finite numbers (impossible after `JSON.parse`) print as serde_json's `null`.
 */
export function jsonNumberText(n: number): string {
  if (!Number.isFinite(n)) return 'null';
  if (Number.isInteger(n) && n < U64_LIMIT && n >= I64_MIN) {
    // Beyond 2^53 String() rounds to shortest digits ("…776000"); BigInt prints the exact value.
    return Number.isSafeInteger(n) ? String(n) : BigInt(n).toString();
  }
  // Shortest round-trip digits and decimal exponent, laid out as ryu does.
  const exp = n.toExponential(); // e.g. "-2.5e-6", "1e+21"
  const neg = exp.charCodeAt(0) === 45;
  const eAt = exp.indexOf('e');
  const mantissa = exp.slice(neg ? 1 : 0, eAt);
  const digits = mantissa.length > 1 ? mantissa[0] + mantissa.slice(2) : mantissa;
  const e = Number(exp.slice(eAt + 1));
  const kk = e + 1; // position of the decimal point relative to the digits
  let out: string;
  if (kk > 0 && kk <= 16) {
    out = digits.length <= kk
      ? digits + '0'.repeat(kk - digits.length) + '.0'
      : digits.slice(0, kk) + '.' + digits.slice(kk);
  } else if (kk > -5 && kk <= 0) {
    out = '0.' + '0'.repeat(-kk) + digits;
  } else {
    out = (digits.length === 1 ? digits : digits[0] + '.' + digits.slice(1)) + 'e' + String(e);
  }
  return neg ? '-' + out : out;
}

/**
 * Rust's `to_string_representation`: a string is used raw, anything else is its compact JSON
 * text (`true`, `null`, `[1,"a"]`, `{"a":1}`; numbers via {@link jsonNumberText}).
 * `undefined` (never produced by JSON) prints as `null`.
 */
export function stringForm(value: unknown): string {
  switch (typeof value) {
    case 'string': return value;
    case 'number': return jsonNumberText(value);
    case 'boolean': return value ? 'true' : 'false';
    case 'object': return value === null ? 'null' : jsonText(value);
    default: return 'null';
  }
}

function jsonText(value: object): string {
  // Nested numbers are re-laid-out like top-level ones. The replacer swaps a number whose ryu
  // text differs from JavaScript's for a sentinel string, unwrapped afterwards; the common case
  // (no such numbers) costs one plain JSON.stringify.
  let patched = false;
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v !== 'number') return v;
    const t = jsonNumberText(v);
    if (t === String(v)) return v;
    patched = true;
    return RAW_PREFIX + t + RAW_SUFFIX;
  });
  return patched ? text.replace(RAW_NUMBER_RE, unwrapRaw) : text;
}
function unwrapRaw(_m: string, text: string): string { return text; }

const RAW_PREFIX = '\u0000#n:';
const RAW_SUFFIX = ':n#\u0000';
// JSON.stringify escapes U+0000 as the six characters \u0000, which user text cannot forge
// (a user's own backslash would be escaped to \\).
const RAW_NUMBER_RE = /"\\u0000#n:([^:"]*):n#\\u0000"/g;

/**
 * Rust's `str::parse::<f64>` grammar: optional sign, then `inf`, `infinity` or `nan` (any case),
 * or digits with an optional fraction and exponent (`1`, `1.`, `.5`, `1e5`, `+2.5E-3`).
 * No whitespace, no hex, no `_`, no empty string.
 */
const RUST_F64_RE = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])$/;

/**
 * Parses a string the way Rust's `f64::from_str` does; `null` when Rust would fail.
 * Overflow gives ±Infinity, as in Rust.
 */
export function parseRustF64(s: string): number | null {
  if (!RUST_F64_RE.test(s)) return null;
  const c = s.charCodeAt(s.length - 1) | 0x20; // last char lower-cased
  if (c === 0x66 /* f */ || c === 0x79 /* y */) return s.charCodeAt(0) === 45 ? -Infinity : Infinity;
  if (c === 0x6e /* n */) return NaN;
  return Number(s);
}

/**
 * Rust's `to_f64_representation`: a JSON number as is, anything else parsed from its string
 * form with {@link parseRustF64} (so `true`, `null`, `"10px"`, `" 5"` are `null`).
 */
export function toF64(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return parseRustF64(value);
  return null; // the JSON text of bool/null/array/object never parses as f64
}

const ASCII_UPPER_RUNS = /[A-Z]+/g;

/**
 * Rust's `to_ascii_lowercase`: folds A–Z only, leaving every other code point untouched
 * (so `"É"` stays `"É"`). Returns the input itself when there is nothing to fold. One scan
 * decides the cheapest path (this runs on every `icontains`/`starts_with`/`ends_with` test).
 */
export function asciiLower(s: string): string {
  let upper = false;
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) upper = true;
    else if (c > 127) ascii = false;
  }
  if (!upper) return s;
  return ascii ? s.toLowerCase() : s.replace(ASCII_UPPER_RUNS, lowerMatch);
}
function lowerMatch(m: string): string { return m.toLowerCase(); }

/**
 * Rust's `str::to_lowercase` (full Unicode lower-case mapping, locale-independent, with the
 * final-sigma rule). JavaScript's `toLowerCase` implements the same Unicode algorithm.
 */
export function unicodeLower(s: string): string {
  return s.toLowerCase();
}
