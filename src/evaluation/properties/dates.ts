/**
 * Date parsing for `is_date_before` / `is_date_after` / `is_date_exact`, following Rust `/flags`:
 * `rust/feature-flags/src/properties/property_matching.rs` (`parse_date_string_in_tz`,
 * `determine_parsed_date_for_property_matching`, `parse_float_timestamp`) and
 * `properties/relative_date.rs`; research/posthog-flag-evaluation.md §3.3.
 *
 * Instants are milliseconds since the Unix epoch as a JS number (fractions of a millisecond kept
 * from the nanosecond digits, so precision is ~0.25 µs around the present; Rust keeps whole
 * nanoseconds). A date string is tried, in order, as:
 * 1. relative `^-?(\d+)([hdwmy])$`, n < 10000 (`"3d"` and `"-3d"` both mean three days ago). The
 *    arithmetic runs on the team-timezone *wall clock* at `nowMs` (h/d/w as fixed durations, m
 *    and y month by month / year by year with the day clamped to the month's end at each step,
 *    so the clamp is sticky: 31 Mar − 2m = 29 Jan), and the resulting wall clock is read back in
 *    the team timezone;
 * 2. RFC 3339 with `Z` or `±HH:MM` (separator `T`, `t` or space; seconds required);
 * 3. naive `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS[.f]]` or with `T`, read in the team timezone,
 *    with chrono's leniency (one-digit fields, whitespace before numbers, see the regexes);
 * 4. Rust's last resort, the `dateparser` crate: only a subset is implemented here
 *    ({@link parseFallback}); other exotic forms (month names, slashes, AM/PM, …) give `null`,
 *    so the comparison is false where Rust might parse them. Documented gap.
 *
 * A wall clock that falls in a DST gap gives `null`; one that occurs twice takes the earlier
 * instant (chrono `LocalResult::Ambiguous` → earliest). The property (actual) side also accepts
 * Unix seconds (see {@link parseActualDate}).
 *
 * Timezones use `Intl` (no packages); an unknown timezone name falls back to UTC.
 */
import { parseRustF64 } from './coerce.js';
import {
  DAY_MS, HOUR_MS, MINUTE_MS, PARSED_CACHE_MAX, SECOND_MS, WEEK_MS, civilFromDays, daysFromCivil, lastDayOfMonth, offsetAt,
  resolveZone, UTC_ZONE, wallToUtc, type Zone,
} from './calendar.js';

/** Relative dates need n below this (Rust `parse_relative_date_parts`). */
export const RELATIVE_DATE_MAX_EXCLUSIVE = 10_000;

// chrono's supported range (years -262143..=262142); outside it Rust's constructors fail.
const MIN_MS = daysFromCivil(-262143, 1, 1) * DAY_MS;
const MAX_MS_EXCLUSIVE = daysFromCivil(262143, 1, 1) * DAY_MS;

// ---------------------------------------------------------------------------------------------
// Relative dates

const RELATIVE_RE = /^-?([0-9]+)([hdwmy])$/;

/** A parsed relative date: `n` units before now. */
export interface RelativeDate {
  readonly n: number;
  readonly unit: 'h' | 'd' | 'w' | 'm' | 'y';
}

/** Parses `^-?(\d+)([hdwmy])$` with n < 10000, else `null` (Rust `parse_relative_date_parts`). */
export function parseRelativeDate(s: string): RelativeDate | null {
  const m = RELATIVE_RE.exec(s);
  if (m === null) return null;
  const n = m[1].length > 6 ? Infinity : Number(m[1]);
  if (!(n < RELATIVE_DATE_MAX_EXCLUSIVE)) return null;
  return { n, unit: m[2] as RelativeDate['unit'] };
}

/**
 * The instant `rel` before `nowMs`, computed on the wall clock of `zone` and read back in it
 * (Rust `parse_relative_date_in_tz`); `null` if the result falls in a DST gap.
 */
export function resolveRelativeDate(rel: RelativeDate, nowMs: number, zone: Zone): number | null {
  const wallNow = nowMs + offsetAt(zone, nowMs);
  let wall: number;
  switch (rel.unit) {
    case 'h': wall = wallNow - rel.n * HOUR_MS; break;
    case 'd': wall = wallNow - rel.n * DAY_MS; break;
    case 'w': wall = wallNow - rel.n * WEEK_MS; break;
    case 'm': case 'y': {
      const days = Math.floor(wallNow / DAY_MS);
      const timeOfDay = wallNow - days * DAY_MS;
      const c = civilFromDays(days);
      let year = c.year, month = c.month, day = c.day;
      if (rel.unit === 'y') {
        // Year by year; only 29 Feb can clamp, and then every later step keeps the 28th.
        if (rel.n > 0 && month === 2 && day === 29) day = 28;
        year -= rel.n;
      } else {
        // Month by month, clamping the day at each step (sticky). Once the day is <= 28 no
        // further step can clamp, so jump the rest of the way.
        let left = rel.n;
        while (left > 0 && day > 28) {
          if (month === 1) { month = 12; year -= 1; } else month -= 1;
          const last = lastDayOfMonth(year, month);
          if (day > last) day = last;
          left -= 1;
        }
        const total = year * 12 + (month - 1) - left;
        year = Math.floor(total / 12);
        month = total - year * 12 + 1;
      }
      wall = daysFromCivil(year, month, day) * DAY_MS + timeOfDay;
      break;
    }
  }
  return inRange(wallToUtc(zone, wall));
}

// ---------------------------------------------------------------------------------------------
// Absolute dates

// chrono `parse_from_rfc3339`: fixed widths, `T`/`t`/space, seconds required, `Z`/`z` or
// `±HH:MM` (colon required; U+2212 accepted as minus), offset below 24 h.
const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+\-\u2212])(\d{2}):(\d{2}))$/;
// chrono `parse_from_str` with `%Y-%m-%d` and `%Y-%m-%d[ T]%H:%M[:%S%.f]`: every numeric field
// may be preceded by whitespace and has 1 up to its width in digits (a year has 1–4, or a sign
// and any number); the space in the format matches any run of whitespace, even none; `T` is
// literal (upper case only).
const NAIVE_DATE_RE = /^\s*(\d{1,4}|[+-]\d+)-\s*(\d{1,2})-\s*(\d{1,2})$/;
const NAIVE_DATETIME_RE = /^\s*(\d{1,4}|[+-]\d+)-\s*(\d{1,2})-\s*(\d{1,2})(?:T|\s*)\s*(\d{1,2}):\s*(\d{1,2})(?::\s*(\d{1,2})(?:\.(\d+))?)?$/;
// Subset of the `dateparser` crate (Rust's last resort; naive input there means UTC).
const UNIX_TIMESTAMP_RE = /^[0-9]{10,19}$/;
// postgres / ymd_hms_z: whitespace separator, then a numeric offset (`-08`, `+0800`, `+09:00`)
// or a zone abbreviation.
const ZONED_DATETIME_RE = /^(\d{4})-(\d{2})-(\d{2})\s+(\d{2}):(\d{2})(?::(\d{2}))?(?:\.(\d{1,9}))?\s*(?:([+-])(\d{2})(?::?(\d{2}))?|([A-Za-z]{1,4}))$/;
const RFC2822_RE = /^(?:(?:mon|tue|wed|thu|fri|sat|sun),\s*)?(\d{1,2})\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\s+(\d{4})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s+(?:([+-])(\d{2})(\d{2})|([a-z]{1,3}))$/i;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
/** Zone abbreviations accepted by the fallback (hours east of UTC); others are unparseable. */
const ZONE_ABBREVIATIONS: Readonly<Record<string, number>> = {
  Z: 0, UT: 0, UTC: 0, GMT: 0, EST: -5, EDT: -4, CST: -6, CDT: -5, MST: -7, MDT: -6, PST: -8, PDT: -7,
};

/** Nanosecond digits (any count, first 9 significant) as fractional milliseconds. */
function fractionMs(digits: string | undefined): number {
  if (digits === undefined) return 0;
  const nanos = Number((digits.length >= 9 ? digits.slice(0, 9) : digits + '000000000'.slice(digits.length)));
  return nanos / 1e6;
}

/** Wall-clock ms of validated fields, or `null` when a field is out of range. */
function wallFromFields(y: number, mo: number, d: number, h: number, mi: number, s: number, fracMs: number): number | null {
  if (mo < 1 || mo > 12 || d < 1 || d > lastDayOfMonth(y, mo) || h > 23 || mi > 59 || s > 60) return null;
  return daysFromCivil(y, mo, d) * DAY_MS + h * HOUR_MS + mi * MINUTE_MS + s * SECOND_MS + fracMs;
}

function inRange(ms: number | null): number | null {
  return ms !== null && ms >= MIN_MS && ms < MAX_MS_EXCLUSIVE ? ms : null;
}

/**
 * Parses an absolute date string (steps 2 and 3 of the module doc, then {@link parseFallback}).
 * Returns ms since the epoch, or `null`.
 */
export function parseAbsoluteDate(s: string, zone: Zone): number | null {
  let m = RFC3339_RE.exec(s);
  if (m !== null) {
    const wall = wallFromFields(+m[1], +m[2], +m[3], +m[4], +m[5], +m[6], fractionMs(m[7]));
    if (wall === null) return null;
    if (m[8] === undefined) return inRange(wall);
    const oh = +m[9], om = +m[10];
    if (oh > 23 || om > 59) return null;
    const offset = (oh * HOUR_MS + om * MINUTE_MS) * (m[8] === '+' ? 1 : -1);
    return inRange(wall - offset);
  }
  m = NAIVE_DATE_RE.exec(s);
  if (m !== null) {
    const wall = wallFromFields(+m[1], +m[2], +m[3], 0, 0, 0, 0);
    // Rust returns here even when the local midnight does not exist (no further parsers).
    return wall === null ? null : inRange(wallToUtc(zone, wall));
  }
  m = NAIVE_DATETIME_RE.exec(s);
  if (m !== null) {
    const wall = wallFromFields(+m[1], +m[2], +m[3], +m[4], +m[5], m[6] === undefined ? 0 : +m[6], fractionMs(m[7]));
    if (wall !== null) return inRange(wallToUtc(zone, wall));
    // chrono rejected the fields: fall through to the generic parser, as Rust does.
  }
  return parseFallback(s);
}

/**
 * A subset of the `dateparser` crate that Rust tries last: Unix timestamps of 10 (seconds),
 * 13 (ms) or 19 (ns) digits; RFC 2822 (`Wed, 02 Jun 2021 06:31:39 GMT`); and
 * `YYYY-MM-DD HH:MM[:SS[.f]]` followed by a numeric offset or a zone abbreviation
 * (`2019-11-29 08:08:05-08`, `2014-04-26 13:13:43 +0800`, `2017-11-25 13:31:15 PST`).
 * Not covered (give `null`): month-name, slash, dot, AM/PM, time-only and Chinese forms, and
 * `YYYY-MM-DD <zone>` (which dateparser resolves at the current time of day).
 */
export function parseFallback(s: string): number | null {
  if (UNIX_TIMESTAMP_RE.test(s)) {
    switch (s.length) {
      case 10: return inRange(Number(s) * SECOND_MS);
      case 13: return inRange(Number(s));
      case 19: {
        const ns = BigInt(s);
        if (ns > 9223372036854775807n) return null; // i64 overflow
        return Number(ns / 1000000n) + Number(ns % 1000000n) / 1e6;
      }
      default: return null;
    }
  }
  let m = ZONED_DATETIME_RE.exec(s);
  if (m !== null) {
    const wall = wallFromFields(+m[1], +m[2], +m[3], +m[4], +m[5], m[6] === undefined ? 0 : +m[6], fractionMs(m[7]));
    const offset = zoneOffsetMs(m[8], m[9], m[10], m[11]);
    return wall === null || offset === null ? null : inRange(wall - offset);
  }
  m = RFC2822_RE.exec(s);
  if (m !== null) {
    const wall = wallFromFields(+m[3], MONTHS.indexOf(m[2].toLowerCase()) + 1, +m[1], +m[4], +m[5], m[6] === undefined ? 0 : +m[6], 0);
    const offset = zoneOffsetMs(m[7], m[8], m[9], m[10]);
    return wall === null || offset === null ? null : inRange(wall - offset);
  }
  return null;
}

/** A numeric offset (sign, hours, optional minutes) or an abbreviation, in ms; `null` if unknown. */
function zoneOffsetMs(sign: string | undefined, hh: string | undefined, mm: string | undefined, abbr: string | undefined): number | null {
  if (abbr !== undefined) {
    const hours = ZONE_ABBREVIATIONS[abbr.toUpperCase()];
    return hours === undefined ? null : hours * HOUR_MS;
  }
  const h = Number(hh), mi = mm === undefined ? 0 : Number(mm);
  if (h > 23 || mi > 59) return null;
  return (h * HOUR_MS + mi * MINUTE_MS) * (sign === '-' ? -1 : 1);
}

/** Rust `parse_date_string_in_tz`: relative first, then absolute. */
export function parseDateString(s: string, nowMs: number, zone: Zone): number | null {
  const rel = parseRelativeDate(s);
  if (rel !== null) {
    const t = resolveRelativeDate(rel, nowMs, zone);
    if (t !== null) return t;
    // A relative date in a DST gap: Rust goes on to the other parsers, which cannot match it.
    return null;
  }
  return parseAbsoluteDate(s, zone);
}

/**
 * Rust `parse_float_timestamp`: Unix seconds (fractions allowed) to ms. Bug-compatible details:
 * NaN becomes the epoch (NaN casts to 0 in Rust); a negative fraction is dropped
 * (`-1.5` → −2 s) because the negative nanosecond count saturates to 0; ±Infinity and values
 * beyond chrono's range give `null`.
 */
export function parseUnixSeconds(seconds: number): number | null {
  if (Number.isNaN(seconds)) return 0;
  const whole = Math.floor(seconds);
  if (!Number.isFinite(whole)) return null;
  let nanos = Math.round((seconds % 1) * 1e9);
  if (nanos < 0) nanos = 0;
  return inRange(whole * SECOND_MS + nanos / 1e6);
}

/**
 * The property (actual) side of a date comparison, as Rust's
 * `determine_parsed_date_for_property_matching`: a JSON number, or a string that parses as f64,
 * is Unix **seconds**; another string is parsed like a filter value; anything else is `null`.
 */
export function parseActualDate(value: unknown, nowMs: number, zone: Zone): number | null {
  if (typeof value === 'number') return parseUnixSeconds(value);
  if (typeof value !== 'string') return null;
  const hit = zone.parsed.get(value);
  if (hit !== undefined) return hit;
  const n = parseRustF64(value);
  let result: number | null;
  if (n !== null) {
    result = parseUnixSeconds(n);
  } else {
    const rel = parseRelativeDate(value);
    if (rel !== null) return resolveRelativeDate(rel, nowMs, zone); // depends on now: not cached
    result = parseAbsoluteDate(value, zone);
  }
  if (zone.parsed.size >= PARSED_CACHE_MAX) zone.parsed.clear();
  zone.parsed.set(value, result);
  return result;
}

/**
 * Parses a filter's date value: ms since the epoch, or `null` when unparseable or not a string
 * (Rust only accepts string filter values). Relative values (`-7d`, `3m`) are anchored at
 * `nowMs` in `timezone`; RFC 3339 keeps its offset; naive dates and date-times are read in
 * `timezone` (an IANA name; unknown names fall back to UTC). See the module doc for the order.
 */
export function parseFilterDate(value: unknown, nowMs: number, timezone: string): number | null {
  if (typeof value !== 'string') return null;
  return parseDateString(value, nowMs, resolveZone(timezone) ?? UTC_ZONE);
}
