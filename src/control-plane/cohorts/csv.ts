/**
 * Static-cohort uploads (PostHog `insert_cohort_from_csv`): a CSV whose `distinct_id` column
 * (or, without such a header, whose first column) lists the members' distinct ids. Blank cells
 * are skipped; ids are trimmed and de-duplicated in order. Parsing is csv-parse's.
 */
import { parse } from 'csv-parse/sync';
import { errors } from '../../errors.js';

/** Most distinct ids one upload may carry. */
export const MAX_CSV_ROWS = 1_000_000;

/**
 * Distinct ids of an uploaded CSV. @throws ApiError 400 attr `csv` for text that is not CSV or
 * holds no id.
 */
export function distinctIdsFromCsv(raw: Buffer | string): string[] {
  let rows: string[][];
  try {
    rows = parse(typeof raw === 'string' ? raw : raw.toString('utf8'), { relax_column_count: true, skip_empty_lines: true, bom: true, to: MAX_CSV_ROWS + 1 });
  } catch (e) {
    throw errors.validation(`The CSV could not be read: ${(e as Error).message}`, 'csv');
  }
  const header = (rows[0] ?? []).map((c) => c.trim().toLowerCase());
  const column = header.indexOf('distinct_id');
  const body = column >= 0 ? rows.slice(1) : rows;
  const seen = new Set<string>();
  for (const row of body) {
    const v = (row[column >= 0 ? column : 0] ?? '').trim();
    if (v !== '') seen.add(v);
  }
  if (seen.size === 0) throw errors.validation('The CSV holds no distinct ids.', 'csv');
  if (seen.size > MAX_CSV_ROWS) throw errors.validation(`A CSV may hold at most ${MAX_CSV_ROWS} distinct ids.`, 'csv');
  return [...seen];
}
