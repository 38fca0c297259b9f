/**
 * Calendar and time-zone arithmetic for the date operators (dates.ts): proleptic-Gregorian civil
 * dates as days since 1970-01-01, allocation free, and IANA time zones through `Intl` (no
 * packages) with per-zone offset caches. Mirrors what chrono and chrono-tz give Rust `/flags`
 * (`rust/feature-flags/src/properties/relative_date.rs` `naive_to_utc_in_tz`). Pure.
 */

/** Milliseconds in a second, minute, hour, day and week (fixed durations: no leap seconds, as chrono). */
export const SECOND_MS = 1000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;

// ---------------------------------------------------------------------------------------------
// Civil calendar arithmetic (proleptic Gregorian, days since 1970-01-01), allocation free.

/** Days since 1970-01-01 of a proleptic-Gregorian date; `month` 1–12. */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = month > 2 ? month - 3 : month + 9;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Scratch output of {@link civilFromDays}; reused so hot paths do not allocate. */
export const civil = { year: 0, month: 0, day: 0 };

/** The proleptic-Gregorian date of `days` since 1970-01-01, written into (and returning) {@link civil}. */
export function civilFromDays(days: number): typeof civil {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  civil.day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  civil.month = mp < 10 ? mp + 3 : mp - 9;
  civil.year = yoe + era * 400 + (civil.month <= 2 ? 1 : 0);
  return civil;
}

function isLeap(y: number): boolean {
  return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
}

/** Last day (28–31) of a month. */
export function lastDayOfMonth(year: number, month: number): number {
  if (month === 2) return isLeap(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

// ---------------------------------------------------------------------------------------------
// Timezones

/** A resolved team timezone: `fmt === null` means UTC (offset always 0). */
export interface Zone {
  readonly name: string;
  readonly fmt: Intl.DateTimeFormat | null;
  /** UTC offset (ms) by UTC minute; offsets only change on whole minutes in tzdata since 1970. */
  readonly cache: Map<number, number>;
  /** Parsed property-side date strings (absolute forms only; relative ones depend on now). */
  readonly parsed: Map<string, number | null>;
}

const UTC_NAMES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'UCT', 'Etc/Universal', 'Universal', 'Etc/Zulu', 'Zulu',
  'GMT', 'Etc/GMT', 'GMT0', 'Etc/GMT0', 'GMT+0', 'GMT-0', 'Etc/GMT+0', 'Etc/GMT-0', 'Greenwich', 'Etc/Greenwich']);
const OFFSET_CACHE_MAX = 1024;
/**
 * Property values repeat across flags and requests (the same `created_at` is tested by every
 * date filter of a request), and parsing costs ~0.5 µs, so absolute parses are memoised per zone.
 * The map is cleared when full, which bounds memory under many distinct values.
 */
export const PARSED_CACHE_MAX = 4096;
const zones = new Map<string, Zone>();

/** The UTC zone. */
export const UTC_ZONE: Zone = { name: 'UTC', fmt: null, cache: new Map(), parsed: new Map() };

/**
 * Resolves an IANA timezone name once (cached per name); an unknown name gives `null`.
 */
export function resolveZone(name: string): Zone | null {
  // Guard: Intl treats an undefined timeZone as the host's zone, which must never leak in.
  if (typeof name !== 'string' || name === '') return null;
  const hit = zones.get(name);
  if (hit) return hit;
  if (UTC_NAMES.has(name)) return UTC_ZONE;
  let fmt: Intl.DateTimeFormat;
  try {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: name, hourCycle: 'h23', era: 'short',
      year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
  } catch {
    return null;
  }
  const zone: Zone = { name, fmt, cache: new Map(), parsed: new Map() };
  zones.set(name, zone);
  return zone;
}

/** Wall clock minus UTC, in ms, at the instant `utcMs` (whole seconds; tzdata LMT has seconds). */
export function offsetAt(zone: Zone, utcMs: number): number {
  const fmt = zone.fmt;
  if (fmt === null) return 0;
  const key = Math.floor(utcMs / MINUTE_MS);
  const hit = zone.cache.get(key);
  if (hit !== undefined) return hit;
  let year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, bc = false;
  for (const p of fmt.formatToParts(utcMs)) {
    switch (p.type) {
      case 'year': year = Number(p.value); break;
      case 'month': month = Number(p.value); break;
      case 'day': day = Number(p.value); break;
      case 'hour': hour = Number(p.value); break;
      case 'minute': minute = Number(p.value); break;
      case 'second': second = Number(p.value); break;
      case 'era': bc = p.value === 'BC' || p.value === 'B'; break;
    }
  }
  if (bc) year = 1 - year;
  const wall = daysFromCivil(year, month, day) * DAY_MS + hour * HOUR_MS + minute * MINUTE_MS + second * SECOND_MS;
  const offset = wall - Math.floor(utcMs / SECOND_MS) * SECOND_MS;
  if (zone.cache.size >= OFFSET_CACHE_MAX) zone.cache.clear();
  zone.cache.set(key, offset);
  return offset;
}

/**
 * Reads a naive wall clock (ms, as if it were UTC) in `zone`: the instant, the earlier one when
 * the wall clock occurs twice (DST fall-back), or `null` when it never occurs (spring-forward gap).
 * Mirrors Rust `relative_date::naive_to_utc_in_tz`. Assumes at most one transition within ±1 day.
 */
export function wallToUtc(zone: Zone, wallMs: number): number | null {
  if (zone.fmt === null) return wallMs;
  const before = offsetAt(zone, wallMs - DAY_MS);
  const after = offsetAt(zone, wallMs + DAY_MS);
  let best: number | null = null;
  if (offsetAt(zone, wallMs - before) === before) best = wallMs - before;
  if (after !== before && offsetAt(zone, wallMs - after) === after) {
    const t = wallMs - after;
    if (best === null || t < best) best = t;
  }
  return best;
}
