/**
 * Which `is_date_before` / `is_date_after` values a flag may store: PostHog accepts a relative
 * date (`-7d`, `1w`, `24h`, `3m`, `1y`) or anything its date parser understands
 * (`determine_parsed_date_for_property_matching`, research/posthog-management-api.md §1.2).
 *
 * The evaluation core (`src/evaluation/properties`, branch `eval`) had no `parseFilterDate`
 * when this was written; this is a small stand-in with the same acceptance rules as
 * research/posthog-flag-evaluation.md describes. Replace with the core's parser once it lands so
 * that the write path and the evaluator can never disagree.
 */

/** Relative dates: optional minus, a count below 10000, one unit (hour, day, week, month, year). */
const RELATIVE_DATE = /^-?\d{1,4}[hdwmy]$/;
/** ISO-like absolute dates: `YYYY-MM-DD` with optional time and zone. */
const ISO_DATE = /^\d{4}-\d{1,2}-\d{1,2}([T ]\d{1,2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** True when `value` is a date PostHog's flag matching can parse. */
export function isValidFilterDate(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const v = value.trim();
  if (v === '') return false;
  if (RELATIVE_DATE.test(v)) return true;
  if (ISO_DATE.test(v)) return isCalendarDate(v);
  // dateutil accepts free-form dates ("Jan 5 2024", "2024/01/05"); V8's parser covers the common ones.
  return !/^\d+$/.test(v) && !Number.isNaN(Date.parse(v));
}

function isCalendarDate(v: string): boolean {
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})/.exec(v);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const dt = new Date(Date.UTC(y, mo - 1, d));
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === mo - 1 && dt.getUTCDate() === d;
}
