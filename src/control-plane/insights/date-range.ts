/**
 * An insight's `dateRange` and `interval` resolved to instants (PostHog's `relative_date_parse`
 * and QueryDateRange): relative `date_from` such as `-30d` starts at the beginning of that day
 * (hour, week, month) in the project's time zone and `date_to` defaults to now, so `-30d` by day
 * draws 31 points, today included.
 *
 * Accepted `date_from` / `date_to`: `-N` + `h|d|w|m|q|y` (hours, days, weeks, months, quarters,
 * years ago), `dStart`, `mStart`, `yStart`, `all` (from only: the project's first event), an ISO
 * date (`2026-11-01`, the start of that day in the project's zone, or its end for `date_to`) or
 * an ISO date-time with an offset. @throws ApiError 400 (attr `dateRange`) for anything else.
 */
import { errors } from '../../errors.js';

/** Bucket sizes a trend is drawn in. */
export type Interval = 'hour' | 'day' | 'week' | 'month';
/** Intervals PostHog offers (minute is refused: not useful over stored events at this scale). */
export const INTERVALS: readonly Interval[] = ['hour', 'day', 'week', 'month'];

/** A date bound: an absolute instant, or "the project's first event" (`all`). */
export type DateBound = { at: Date } | { all: true };

const RELATIVE = /^-(\d{1,5})([hdwmqy])$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The local calendar parts of `at` in `timeZone`. */
function localParts(at: Date, timeZone: string): { y: number; mo: number; d: number; h: number } {
  const f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', hourCycle: 'h23' });
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return { y: Number(parts.year), mo: Number(parts.month), d: Number(parts.day), h: Number(parts.hour) };
}

/** The instant of local wall time (y, mo, d, h) in `timeZone` (the earlier one across a DST fold). */
export function zonedInstant(timeZone: string, y: number, mo: number, d: number, h = 0): Date {
  const guess = Date.UTC(y, mo - 1, d, h);
  let at = guess;
  for (let i = 0; i < 3; i++) {
    const p = localParts(new Date(at), timeZone);
    const shown = Date.UTC(p.y, p.mo - 1, p.d, p.h);
    at += guess - shown;
  }
  return new Date(at);
}

/**
 * Parses one bound. `end` picks the end of a calendar date given without a time.
 * @throws ApiError 400.
 */
export function parseDateBound(raw: unknown, now: Date, timeZone: string, end: boolean): DateBound {
  if (raw === 'all' && !end) return { all: true };
  if (typeof raw !== 'string' || raw === '') throw errors.validation(`Invalid date: ${JSON.stringify(raw)}.`, 'dateRange');
  const local = localParts(now, timeZone);
  const rel = RELATIVE.exec(raw);
  if (rel) {
    const n = Number(rel[1]);
    // The same local time of day, n units back (the minutes carried over: zones move by hours).
    const back = (y: number, mo: number, d: number) => ({ at: new Date(zonedInstant(timeZone, y, mo, d, local.h).getTime() + (now.getTime() % 3_600_000)) });
    switch (rel[2]) {
      case 'h': return { at: new Date(now.getTime() - n * 3_600_000) };
      case 'd': return back(local.y, local.mo, local.d - n);
      case 'w': return back(local.y, local.mo, local.d - 7 * n);
      case 'm': return back(local.y, local.mo - n, local.d);
      case 'q': return back(local.y, local.mo - 3 * n, local.d);
      default: return back(local.y - n, local.mo, local.d);
    }
  }
  if (raw === 'dStart') return { at: zonedInstant(timeZone, local.y, local.mo, local.d) };
  if (raw === 'mStart') return { at: zonedInstant(timeZone, local.y, local.mo, 1) };
  if (raw === 'yStart') return { at: zonedInstant(timeZone, local.y, 1, 1) };
  if (ISO_DATE.test(raw)) {
    const [y, mo, d] = raw.split('-').map(Number) as [number, number, number];
    const start = zonedInstant(timeZone, y, mo, d);
    return { at: end ? new Date(zonedInstant(timeZone, y, mo, d + 1).getTime() - 1) : start };
  }
  const parsed = Date.parse(raw);
  if (Number.isFinite(parsed) && /T|\s/.test(raw)) return { at: new Date(parsed) };
  throw errors.validation(`Invalid date: ${JSON.stringify(raw)}.`, 'dateRange');
}
