/**
 * Which `is_date_before` / `is_date_after` values a flag may store: exactly those the
 * evaluation core can parse (relative `-7d`, RFC 3339, naive dates, …; research
 * §1.2 "Invalid date value"), so the write path and the evaluator can never disagree.
 */
import { parseFilterDate } from '../../evaluation/properties/index.js';

/** True when `value` is a date the evaluator understands. Validity does not depend on the clock or zone. */
export function isValidFilterDate(value: unknown): boolean {
  return parseFilterDate(value, Date.now(), 'UTC') !== null;
}
