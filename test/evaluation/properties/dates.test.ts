/**
 * Date parsing and the is_date_* operators (Rust `parse_date_string_in_tz`, `relative_date.rs`;
 * research/posthog-flag-evaluation.md §3.3). Expectations are UTC instants in ms.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePropertyFilter, parseFilterDate } from '../../../src/evaluation/properties/index.js';

const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number => Date.UTC(y, mo - 1, d, h, mi, s, ms);
const NY = 'America/New_York';
/** Midnight UTC of a proleptic-Gregorian date, for years Date.UTC cannot take directly. */
function daysMs(y: number, mo: number, d: number): number {
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  return t.getTime();
}

type ParseRow = [name: string, value: unknown, nowMs: number, timezone: string, expected: number | null];

const NOW = utc(2024, 1, 15, 12);

const parseRows: ParseRow[] = [
  // relative, UTC
  ['-7d', '-7d', NOW, 'UTC', utc(2024, 1, 8, 12)],
  ['7d without sign means the same', '7d', NOW, 'UTC', utc(2024, 1, 8, 12)],
  ['hours', '-36h', NOW, 'UTC', utc(2024, 1, 14)],
  ['weeks', '2w', NOW, 'UTC', utc(2024, 1, 1, 12)],
  ['zero days is now', '0d', NOW, 'UTC', NOW],
  ['leading zeros', '000h', NOW, 'UTC', NOW],
  ['n = 9999 accepted', '9999h', NOW, 'UTC', NOW - 9999 * 3_600_000],
  ['n = 10000 rejected', '10000d', NOW, 'UTC', null],
  ['huge n rejected', '100000000000000000000y', NOW, 'UTC', null],
  ['fraction rejected', '1.5d', NOW, 'UTC', null],
  ['unknown unit', '3x', NOW, 'UTC', null],
  ['seconds are not a unit', '3s', NOW, 'UTC', null],
  ['plus sign rejected', '+3d', NOW, 'UTC', null],
  ['upper-case unit rejected', '3D', NOW, 'UTC', null],
  ['trailing newline rejected', '3d\n', NOW, 'UTC', null],
  // months and years: calendar-aware, clamped to month end at each step (sticky)
  ['1m from 31 Mar (leap year)', '1m', utc(2024, 3, 31, 10), 'UTC', utc(2024, 2, 29, 10)],
  ['2m from 31 Mar: clamp is sticky', '2m', utc(2024, 3, 31, 10), 'UTC', utc(2024, 1, 29, 10)],
  ['12m from 31 Mar', '12m', utc(2024, 3, 31, 10), 'UTC', utc(2023, 3, 29, 10)],
  ['13m from 31 Mar reaches Feb 2023', '13m', utc(2024, 3, 31, 10), 'UTC', utc(2023, 2, 28, 10)],
  ['1m from 31 May', '1m', utc(2024, 5, 31), 'UTC', utc(2024, 4, 30)],
  ['1m across the year', '1m', utc(2024, 1, 31, 23, 59, 59, 999), 'UTC', utc(2023, 12, 31, 23, 59, 59, 999)],
  ['1m from the 15th keeps the day', '-1m', utc(2024, 3, 15), 'UTC', utc(2024, 2, 15)],
  ['24m from the 15th', '24m', utc(2024, 3, 15), 'UTC', utc(2022, 3, 15)],
  ['1y from 29 Feb', '1y', utc(2024, 2, 29), 'UTC', utc(2023, 2, 28)],
  ['4y from 29 Feb: sticky 28th', '4y', utc(2024, 2, 29), 'UTC', utc(2020, 2, 28)],
  ['1y from an ordinary day', '-1y', utc(2024, 7, 31, 8), 'UTC', utc(2023, 7, 31, 8)],
  ['12m equals 1y from the 1st', '12m', utc(2020, 1, 1, 12, 1, 20, 134), 'UTC', utc(2019, 1, 1, 12, 1, 20, 134)],
  // relative in a DST timezone: arithmetic on the wall clock
  ['1d across spring-forward is 23 real hours', '1d', utc(2024, 3, 10, 12), NY, utc(2024, 3, 9, 13)],
  ['24h is wall-clock too', '24h', utc(2024, 3, 10, 12), NY, utc(2024, 3, 9, 13)],
  ['1d landing in the gap', '1d', utc(2024, 3, 11, 6, 30), NY, null],
  ['1d landing in the overlap takes the earlier instant', '1d', utc(2024, 11, 4, 6, 30), NY, utc(2024, 11, 3, 5, 30)],
  ['1m in New York', '1m', utc(2024, 7, 1, 3), NY, utc(2024, 5, 31, 3)],
  // vectors pinned by Rust's relative_date.rs / property_matching.rs tests
  ['Rust: 9999m is representable', '9999m', utc(2020, 1, 1, 12), 'UTC', daysMs(1186, 10, 1) + 12 * 3_600_000],
  ['Rust: 9999y is representable', '9999y', utc(2020, 1, 1, 12), 'UTC', daysMs(-7979, 1, 1) + 12 * 3_600_000],
  ['Rust: 1m from 31 Mar 2019 (non-leap)', '1m', utc(2019, 3, 31, 12), 'UTC', utc(2019, 2, 28, 12)],
  ['Rust: 8m from 3 Apr 2020', '8m', utc(2020, 4, 3), 'UTC', utc(2019, 8, 3)],
  ['Rust: -7d anchored in Pacific', '-7d', utc(2024, 6, 10, 9), 'America/Los_Angeles', utc(2024, 6, 3, 9)],
  ['Rust: naive Pacific fall-back picks earliest', '2024-11-03 01:30:00', NOW, 'America/Los_Angeles', utc(2024, 11, 3, 8, 30)],
  ['Rust: naive Pacific spring-forward gap', '2024-03-10 02:30:00', NOW, 'America/Los_Angeles', null],
  ['Rust: naive date in Pacific is 07:00Z', '2024-06-01', NOW, 'America/Los_Angeles', utc(2024, 6, 1, 7)],
  ['Rust: ISO with micros and +00:00', '2025-01-24T23:20:24.865148+00:00', NOW, 'UTC', utc(2025, 1, 24, 23, 20, 24, 865) + 0.148],
  ['Rust: naive with one-digit fraction', '2025-12-19T00:00:00.5', NOW, 'UTC', utc(2025, 12, 19, 0, 0, 0, 500)],
  // RFC 3339, offset as written
  ['RFC 3339 Z', '2024-06-01T10:00:00Z', NOW, NY, utc(2024, 6, 1, 10)],
  ['RFC 3339 offset', '2024-06-01T10:00:00+02:00', NOW, NY, utc(2024, 6, 1, 8)],
  ['RFC 3339 negative offset', '2024-06-01T10:00:00-05:30', NOW, 'UTC', utc(2024, 6, 1, 15, 30)],
  ['RFC 3339 fraction', '2024-06-01T10:00:00.5Z', NOW, 'UTC', utc(2024, 6, 1, 10, 0, 0, 500)],
  ['RFC 3339 nanoseconds', '2024-06-01T10:00:00.123456789Z', NOW, 'UTC', utc(2024, 6, 1, 10) + 123.456789],
  ['RFC 3339 space separator', '2024-06-01 10:00:00Z', NOW, NY, utc(2024, 6, 1, 10)],
  ['RFC 3339 lower-case t and z', '2024-06-01t10:00:00z', NOW, NY, utc(2024, 6, 1, 10)],
  ['RFC 3339 Unicode minus offset', '2024-06-01T10:00:00\u221205:00', NOW, 'UTC', utc(2024, 6, 1, 15)],
  ['RFC 3339 needs two-digit fields', '2024-6-01T10:00:00Z', NOW, 'UTC', null],
  ['RFC 3339 invalid day', '2024-02-30T10:00:00Z', NOW, 'UTC', null],
  ['RFC 3339 invalid offset', '2024-06-01T10:00:00+24:00', NOW, 'UTC', null],
  // naive, in the team timezone
  ['naive date in UTC', '2024-06-01', NOW, 'UTC', utc(2024, 6, 1)],
  ['naive date in New York (EDT)', '2024-06-01', NOW, NY, utc(2024, 6, 1, 4)],
  ['naive date in New York (EST)', '2024-01-01', NOW, NY, utc(2024, 1, 1, 5)],
  ['naive date, one-digit month and day', '2024-6-1', NOW, 'UTC', utc(2024, 6, 1)],
  ['naive date-time T', '2024-06-01T10:00', NOW, NY, utc(2024, 6, 1, 14)],
  ['naive date-time space, seconds', '2024-06-01 10:00:30', NOW, NY, utc(2024, 6, 1, 14, 0, 30)],
  ['naive date-time fraction', '2024-06-01 10:00:30.25', NOW, 'UTC', utc(2024, 6, 1, 10, 0, 30, 250)],
  ['naive before spring-forward', '2024-03-10 01:59', NOW, NY, utc(2024, 3, 10, 6, 59)],
  ['naive in the spring-forward gap', '2024-03-10 02:30', NOW, NY, null],
  ['naive after spring-forward', '2024-03-10 03:00', NOW, NY, utc(2024, 3, 10, 7)],
  ['naive in the fall-back overlap: earlier', '2024-11-03 01:30', NOW, NY, utc(2024, 11, 3, 5, 30)],
  ['naive after fall-back', '2024-11-03 02:00', NOW, NY, utc(2024, 11, 3, 7)],
  ['naive in a 30-minute DST gap (Lord Howe)', '2024-10-06 02:15', NOW, 'Australia/Lord_Howe', null],
  ['naive in a 30-minute overlap takes the earlier (Lord Howe)', '2024-04-07 01:45', NOW, 'Australia/Lord_Howe', utc(2024, 4, 6, 14, 45)],
  ['naive on a skipped day (Apia, 2011-12-30)', '2011-12-30', NOW, 'Pacific/Apia', null],
  ['naive the day after the skipped day (Apia)', '2011-12-31', NOW, 'Pacific/Apia', utc(2011, 12, 30, 10)],
  ['naive in Kolkata (+05:30)', '2024-06-01 00:00', NOW, 'Asia/Kolkata', utc(2024, 5, 31, 18, 30)],
  ['naive: chrono allows whitespace before numbers', ' 2024- 6- 1', NOW, 'UTC', utc(2024, 6, 1)],
  ['naive: two-digit year is year 24', '24-06-01', NOW, 'UTC', daysMs(24, 6, 1)],
  ['naive: five-digit unsigned year rejected', '20240-06-01', NOW, 'UTC', null],
  ['naive: signed year', '+2024-06-01', NOW, 'UTC', utc(2024, 6, 1)],
  ['naive: the format space matches no space', '2024-06-0110:00', NOW, 'UTC', utc(2024, 6, 1, 10)],
  ['naive: several spaces', '2024-06-01   10:00', NOW, 'UTC', utc(2024, 6, 1, 10)],
  ['naive: lower-case t is not a separator', '2024-06-01t10:00', NOW, 'UTC', null],
  ['naive: trailing space rejected', '2024-06-01 10:00 ', NOW, 'UTC', null],
  ['naive: fraction needs seconds', '2024-06-01 10:00.5', NOW, 'UTC', null],
  ['naive invalid date', '2024-02-30', NOW, 'UTC', null],
  ['naive invalid month', '2024-13-01', NOW, 'UTC', null],
  ['naive invalid hour', '2024-06-01 24:00', NOW, 'UTC', null],
  ['leap day', '2024-02-29', NOW, 'UTC', utc(2024, 2, 29)],
  ['non-leap 29 Feb', '2023-02-29', NOW, 'UTC', null],
  // dateparser fallback subset
  ['postgres offset hours', '2019-11-29 08:08:05-08', NOW, NY, utc(2019, 11, 29, 16, 8, 5)],
  ['postgres offset without seconds', '2019-11-29 08:08-08', NOW, 'UTC', utc(2019, 11, 29, 16, 8)],
  ['postgres fraction and offset', '2021-05-02 23:31:36.0741-07', NOW, 'UTC', utc(2021, 5, 3, 6, 31, 36, 74) + 0.1],
  ['space then +HHMM', '2014-04-26 13:13:43 +0800', NOW, NY, utc(2014, 4, 26, 5, 13, 43)],
  ['trailing UTC', '2024-06-01 10:00:00 UTC', NOW, NY, utc(2024, 6, 1, 10)],
  ['trailing PST', '2017-11-25 13:31:15 PST', NOW, 'UTC', utc(2017, 11, 25, 21, 31, 15)],
  ['unknown abbreviation', '2017-11-25 13:31:15 XYZ', NOW, 'UTC', null],
  ['RFC 2822', 'Wed, 02 Jun 2021 06:31:39 GMT', NOW, NY, utc(2021, 6, 2, 6, 31, 39)],
  ['RFC 2822 numeric zone, no weekday', '2 Jun 2021 06:31:39 -0100', NOW, 'UTC', utc(2021, 6, 2, 7, 31, 39)],
  ['Unix seconds (10 digits)', '1511648546', NOW, NY, 1511648546000],
  ['Unix ms (13 digits)', '1620021848429', NOW, 'UTC', 1620021848429],
  ['Unix ns (19 digits)', '1620024872717915000', NOW, 'UTC', 1620024872717.915],
  ['11 digits is no timestamp', '16200218484', NOW, 'UTC', null],
  ['T with offset without colon is not RFC 3339 nor dateparser', '2024-06-01T10:00:00+0200', NOW, NY, null],
  ['T with minutes and Z (no seconds)', '2024-06-01T10:00Z', NOW, NY, null],
  ['month names are not supported (gap)', 'May 25, 2021', NOW, 'UTC', null],
  // unparseable
  ['empty string', '', NOW, 'UTC', null],
  ['words', 'yesterday', NOW, 'UTC', null],
  ['not a string', 1704067200, NOW, 'UTC', null],
  ['null', null, NOW, 'UTC', null],
  ['unknown timezone falls back to UTC', '2024-06-01', NOW, 'Mars/Olympus_Mons', utc(2024, 6, 1)],
  ['empty timezone falls back to UTC (never the host zone)', '2024-06-01', NOW, '', utc(2024, 6, 1)],
  ['missing timezone falls back to UTC', '2024-06-01', NOW, undefined as unknown as string, utc(2024, 6, 1)],
];

for (const [name, value, nowMs, tz, expected] of parseRows) {
  test(`parseFilterDate: ${name}`, () => {
    const got = parseFilterDate(value, nowMs, tz);
    if (expected === null || got === null) assert.equal(got, expected);
    else assert.ok(Math.abs(got - expected) < 1e-6, `${got} (${new Date(got).toISOString()}) != ${expected} (${new Date(expected).toISOString()})`);
  });
}

type OpRow = [name: string, operator: string, filter: unknown, actual: unknown, expected: boolean, timezone?: string];

const opRows: OpRow[] = [
  ['after relative, naive actual', 'is_date_after', '-7d', '2024-01-10', true],
  ['before relative, naive actual', 'is_date_before', '-7d', '2024-01-01', true],
  ['exact relative', 'is_date_exact', '-7d', '2024-01-08T12:00:00Z', true],
  ['after is strict', 'is_date_after', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', false],
  ['before is strict', 'is_date_before', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', false],
  ['exact same instant, different offsets', 'is_date_exact', '2024-01-01T00:00:00Z', '2024-01-01T02:00:00+02:00', true],
  ['actual number is Unix seconds', 'is_date_exact', '2024-01-01T00:00:00Z', 1704067200, true],
  ['actual numeric string is Unix seconds', 'is_date_exact', '2024-01-01T00:00:00Z', '1704067200', true],
  ['actual fractional seconds', 'is_date_exact', '2024-01-01T00:00:00.5Z', 1704067200.5, true],
  ['actual negative fraction is floored (Rust)', 'is_date_exact', '1969-12-31T23:59:58Z', -1.5, true],
  ['actual ms number reads as seconds (far future)', 'is_date_after', '2100-01-01', 1704067200000, true],
  ['actual "nan" is the epoch (Rust cast)', 'is_date_exact', '1970-01-01T00:00:00Z', 'nan', true],
  ['actual "inf" is unparseable', 'is_date_after', '2000-01-01', 'inf', false],
  ['actual exponent string is seconds', 'is_date_exact', '1970-01-01T00:16:40Z', '1e3', true],
  ['actual "2024" is seconds, not a year', 'is_date_before', '1970-01-02', '2024', true],
  ['Rust: fractional timestamp keeps nanoseconds', 'is_date_exact', '2028-03-10T05:09:07.867530107Z', 1836277747.86753, true],
  ['Rust: fractional timestamp string', 'is_date_exact', '2028-03-10T05:09:07.867530107Z', '1836277747.86753', true],
  ['Rust: epoch at Pacific midnight is not after', 'is_date_after', '2024-06-01', 1717225200, false, 'America/Los_Angeles'],
  ['Rust: one second later is after', 'is_date_after', '2024-06-01', 1717225201, true, 'America/Los_Angeles'],
  ['Rust: naive person 08:00 Pacific is after 14:00Z', 'is_date_after', '2024-06-01T14:00:00Z', '2024-06-01 08:00:00', true, 'America/Los_Angeles'],
  ['Rust: same naive person in UTC is not', 'is_date_after', '2024-06-01T14:00:00Z', '2024-06-01 08:00:00', false],
  ['Rust: before Pacific midnight', 'is_date_before', '2024-06-01', '2024-06-01T03:00:00Z', true, 'America/Los_Angeles'],
  ['actual naive read in team timezone', 'is_date_exact', '2024-06-01T04:00:00Z', '2024-06-01 00:00', true, NY],
  ['both naive in team timezone', 'is_date_exact', '2024-06-01', '2024-06-01T00:00:00', true, NY],
  ['actual relative string anchored at now', 'is_date_before', '-1h', '-1d', true],
  ['actual boolean', 'is_date_before', '2100-01-01', true, false],
  ['actual null', 'is_date_before', '2100-01-01', null, false],
  ['actual array', 'is_date_before', '2100-01-01', ['2000-01-01'], false],
  ['actual object', 'is_date_before', '2100-01-01', {}, false],
  ['actual unparseable', 'is_date_before', '2100-01-01', 'soon', false],
  ['filter number is not a date', 'is_date_before', 2000000000, 1, false],
  ['filter unparseable', 'is_date_after', 'garbage', '2024-01-01', false],
  ['filter relative in the DST gap', 'is_date_after', '1d', '2030-01-01', false, NY],
];

const OP_NOW = utc(2024, 1, 15, 12);
for (const [name, operator, value, actual, expected, tz] of opRows) {
  test(`${operator}: ${name}`, () => {
    const f = compilePropertyFilter({ key: 'd', operator, value }, { timezone: tz ?? 'UTC' });
    // The DST-gap row needs a "now" whose day-before wall clock is in the gap.
    const now = name.includes('DST gap') ? utc(2024, 3, 11, 6, 30) : OP_NOW;
    assert.equal(f.test({ d: actual }, now), expected);
  });
}

test('relative filters follow nowMs between calls', () => {
  const f = compilePropertyFilter({ key: 'd', operator: 'is_date_after', value: '-1d' }, { timezone: 'UTC' });
  const props = { d: '2024-01-10T00:00:00Z' };
  assert.equal(f.test(props, utc(2024, 1, 10, 12)), true);
  assert.equal(f.test(props, utc(2024, 1, 11, 12)), false);
  assert.equal(f.test(props, utc(2024, 1, 10, 12)), true);
});

test('missing date property is false for all three operators', () => {
  for (const operator of ['is_date_before', 'is_date_after', 'is_date_exact']) {
    const f = compilePropertyFilter({ key: 'd', operator, value: '2024-01-01' }, { timezone: NY });
    assert.equal(f.test({}, OP_NOW), false, operator);
  }
});
