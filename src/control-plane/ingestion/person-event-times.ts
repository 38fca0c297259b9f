/**
 * The per-person pre-aggregate of event times (table `person_event_times`,
 * migration 0017), kept in the transaction that stores a batch's events ({@link foldEventTimes}
 * after their COPY; {@link insertFoldingTimes} in the statement path's insert): for each event
 * actually inserted (a redelivered one is not counted twice) with a person, the row (project,
 * event, UTC month, person) counts it, widens [first_ts, last_ts], and merges its timestamp into
 * the sorted `times` while the row holds at most {@link MAX_KEPT_TIMES} events (NULL after).
 * Events arriving in time order (live capture) append; only a late one re-sorts the row.
 * `$feature_flag_called` is left out: it is most of SDK traffic, experiment_exposures already
 * pre-aggregates it, and a funnel step on it is answered by probing the events instead.
 * Experiment funnels read these rows instead of probing the events index per person and step
 * (experiments/results/metric-values.ts `summaryFunnel`).
 */
import type { PendingQuery } from 'postgres';
import type { Tx } from '../db/connect.js';
import type { IngestEvent } from '../../contract/events.js';
import { FEATURE_FLAG_CALLED } from './flag-usage.js';
import { copyText, type CopySession } from './events-copy.js';

/** Timestamps a row keeps; beyond, `times` is NULL and readers probe the events (migration 0017). */
export const MAX_KEPT_TIMES = 64;

/** The UTC month start of a timestamptz expression, as SQL text over `column` (the partition key's rule). */
const MONTH_OF = (column: string) => `date_trunc('month', ${column} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;

/**
 * SQL text of the `person_event_times` rows of the events in `source` (a relation with the
 * events' project_id, event, person_id and timestamp): one row per (project, event, UTC month,
 * person) with its count, first and last time, and its sorted times while at most
 * {@link MAX_KEPT_TIMES}; personless events and `$feature_flag_called` are left out (module doc).
 * `source` is trusted SQL text (a table or CTE name). Also what bench/experiments.ts loads.
 */
export const FOLDED_ROWS = (source: string) => `
  SELECT project_id, event, ${MONTH_OF('timestamp')}, person_id, count(*), min(timestamp), max(timestamp),
    CASE WHEN count(*) <= ${MAX_KEPT_TIMES} THEN array_agg(timestamp ORDER BY timestamp) END
  FROM ${source} WHERE person_id IS NOT NULL AND event <> '${FEATURE_FLAG_CALLED}'
  GROUP BY 1, 2, 3, 4`;

/** The upsert of folded rows into `person_event_times` (rows of one statement never share a key). */
const UPSERT = `ON CONFLICT (project_id, event, month, person_id) DO UPDATE SET
        n = p.n + EXCLUDED.n,
        first_ts = LEAST(p.first_ts, EXCLUDED.first_ts),
        last_ts = GREATEST(p.last_ts, EXCLUDED.last_ts),
        times = CASE WHEN p.n + EXCLUDED.n > ${MAX_KEPT_TIMES} THEN NULL
          WHEN EXCLUDED.first_ts >= p.last_ts THEN p.times || EXCLUDED.times
          ELSE ARRAY(SELECT t FROM unnest(p.times || EXCLUDED.times) t ORDER BY t) END`;

/**
 * UTC month start of an instant given as `Date.toISOString()` text (the partition key's rule,
 * {@link MONTH_OF}): normalised events are within years 1–9999, whose ISO text is fixed-width.
 */
const monthOfIso = (iso: string) => `${iso.slice(0, 7)}-01T00:00:00.000Z`;

/** A folded row: project, event, UTC month, person, and the times of its events (ISO text, sorted once grouped). */
interface FoldedRow { p: number; e: string; m: string; u: string; times: string[] }

/** The `times` array literal of a row, or null past {@link MAX_KEPT_TIMES} (ISO text holds no comma, brace, quote or space). */
const timesLiteral = (t: readonly string[]) => (t.length > MAX_KEPT_TIMES ? null : t.length === 1 ? `{${t[0]}}` : `{${t.join(',')}}`);

/** `rows` as COPY text lines of `person_event_times`. */
function foldedCopyLines(rows: readonly FoldedRow[]): string {
  let out = '';
  for (const r of rows) {
    const t = r.times;
    out += `${r.p}\t${copyText(r.e)}\t${r.m}\t${r.u}\t${t.length}\t${t[0]}\t${t[t.length - 1]}\t${timesLiteral(t) ?? '\\N'}\n`;
  }
  return out;
}

/** The upsert of `rows` (keys all distinct) into `person_event_times`: counts added, LEAST / GREATEST, times merged ({@link UPSERT}). */
function upsertFolded(tx: Tx, rows: readonly FoldedRow[]): PendingQuery<never[]> {
  const names: string[] = [];
  const nameIndex = new Map<string, number>();
  let ps = '', es = '', ms = '', us = '', ns = '', fs = '', ls = '', tss = '';
  for (const r of rows) {
    const t = r.times;
    let ei = nameIndex.get(r.e);
    if (ei === undefined) { ei = names.length + 1; names.push(r.e); nameIndex.set(r.e, ei); }
    const sep = ps === '' ? '' : ',';
    ps += sep + r.p; es += sep + ei; ms += sep + r.m; us += sep + r.u; ns += sep + t.length;
    fs += sep + t[0]; ls += sep + t[t.length - 1]; tss += (tss === '' ? '' : ';') + (timesLiteral(t) ?? 'N');
  }
  // Columns travel as comma- (times: semicolon-) joined text: ids, numbers and ISO instants hold
  // neither, and the driver escapes array parameters character by character. Event names, which
  // may hold anything, go once each as a text[] indexed by the rows.
  return tx`INSERT INTO person_event_times AS p (project_id, event, month, person_id, n, first_ts, last_ts, times)
    SELECT v.p, (${names}::text[])[v.e], v.m, v.u, v.n, v.f, v.l, v.ts::timestamptz[]
    FROM unnest(string_to_array(${ps}, ',')::bigint[], string_to_array(${es}, ',')::int[],
      string_to_array(${ms}, ',')::timestamptz[], string_to_array(${us}, ',')::uuid[],
      string_to_array(${ns}, ',')::int[], string_to_array(${fs}, ',')::timestamptz[],
      string_to_array(${ls}, ',')::timestamptz[], string_to_array(${tss}, ';', 'N')) AS v(p, e, m, u, n, f, l, ts)
    ${tx.unsafe(UPSERT)}`;
}

/**
 * Folds `events` — all of them inserted by this transaction, none stored before (the COPY path,
 * events-copy.ts), `personIds[i]` events[i]'s person, `isos[i]` its timestamp's ISO text — into
 * `person_event_times`: the rows of {@link FOLDED_ROWS}, grouped here instead of in Postgres.
 * Rows of persons in `newPersons` (uuids this transaction generated, so no row can name them
 * yet) are COPYed; the others are upserted in one statement; the caller settles `copies` before
 * the transaction ends. Resolves to the number of rows written.
 */
export async function foldEventTimes(tx: Tx, copies: CopySession, events: readonly IngestEvent[], personIds: readonly (string | null)[],
  isos: readonly string[], newPersons: ReadonlySet<string>): Promise<number> {
  // Grouped by person first (a person has one row per batch in live capture): no key text is
  // built per event, and the month text is reused while events stay in one month.
  const byPerson = new Map<string, FoldedRow[]>();
  const groups: FoldedRow[] = [];
  let monthPrefix = '';
  let m = '';
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]!;
    const u = personIds[i];
    if (!u || ev.event === FEATURE_FLAG_CALLED) continue;
    const iso = isos[i]!;
    if (monthPrefix === '' || !iso.startsWith(monthPrefix)) { m = monthOfIso(iso); monthPrefix = iso.slice(0, 7); }
    let rows = byPerson.get(u);
    if (rows === undefined) byPerson.set(u, rows = []);
    const g = rows.find((r) => r.m === m && r.p === ev.projectId && r.e === ev.event);
    if (g !== undefined) g.times.push(iso);
    else {
      const row: FoldedRow = { p: ev.projectId, e: ev.event, m, u, times: [iso] };
      rows.push(row);
      groups.push(row);
    }
  }
  if (groups.length === 0) return 0;
  const fresh: FoldedRow[] = [];
  const known: FoldedRow[] = [];
  for (const g of groups) {
    if (g.times.length > 1) g.times.sort(); // fixed-width ISO text sorts as time
    (newPersons.has(g.u) ? fresh : known).push(g);
  }
  // The upsert confirms the COPY before it, if any (events-copy.ts CopySession.settle).
  if (known.length > 0) await copies.settle(upsertFolded(tx, known));
  if (fresh.length > 0) {
    await copies.copy('COPY person_event_times (project_id, event, month, person_id, n, first_ts, last_ts, times) FROM STDIN', foldedCopyLines(fresh));
  }
  return groups.length;
}

/**
 * `WITH ins AS (<insert>) …` that also folds the rows `insert` inserted into `person_event_times`
 * and selects how many rows `insert` inserted (one row, `inserted`): the rows themselves stay in
 * Postgres (sending and parsing them back cost the control plane more than the count it needs).
 * `insert` must be an `INSERT INTO events … RETURNING project_id, event, person_id, timestamp`.
 * Rows of one statement never meet twice in the upsert: they are grouped per key first.
 */
export function insertFoldingTimes(tx: Tx, insert: PendingQuery<any>): PendingQuery<{ inserted: number }[]> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return tx`WITH ins AS (${insert}),
    folded AS (
      INSERT INTO person_event_times AS p (project_id, event, month, person_id, n, first_ts, last_ts, times)
      ${tx.unsafe(FOLDED_ROWS('ins'))}
      ${tx.unsafe(UPSERT)})
    SELECT count(*)::int AS inserted FROM ins`;
}
