/**
 * Experiment exposures, pre-aggregated at ingestion (table
 * `experiment_exposures`, migration 0010): for each `$feature_flag_called` event with a flag key,
 * a response and a person, the row (project, flag key, person, response as text) keeps the
 * earliest and latest call time. Experiment analysis reads these rows — about one per exposed
 * person — instead of scanning every exposure event (experiments/results/exposures.ts).
 */
import type { Tx } from '../db/connect.js';
import { FEATURE_FLAG_CALLED } from './flag-usage.js';
import { MAX_KEY_CHARS, type IngestEvent } from '../../contract/events.js';

/** `jsonb ->> key` of a JSON value: strings as they are, other scalars as JSON text; null for objects, arrays, null. */
function asText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  return null;
}

/** Folds the exposures of `events` (already deduplicated; `personIds[i]` is events[i]'s person) into the table. */
export async function recordExposures(tx: Tx, events: readonly IngestEvent[], personIds: readonly (string | null)[]): Promise<void> {
  const rows = new Map<string, { p: number; key: string; person: string; variant: string; first: Date; last: Date }>();
  events.forEach((ev, i) => {
    const person = personIds[i];
    if (ev.event !== FEATURE_FLAG_CALLED || !person) return;
    const key = ev.properties.$feature_flag;
    const variant = asText(ev.properties.$feature_flag_response);
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_CHARS || variant === null) return;
    const k = `${ev.projectId}\u0000${key}\u0000${person}\u0000${variant}`;
    const cur = rows.get(k);
    if (!cur) rows.set(k, { p: ev.projectId, key, person, variant, first: ev.timestamp, last: ev.timestamp });
    else {
      if (ev.timestamp < cur.first) cur.first = ev.timestamp;
      if (ev.timestamp > cur.last) cur.last = ev.timestamp;
    }
  });
  if (rows.size === 0) return;
  const list = [...rows.values()];
  // Rows travel as one JSON text (json_to_recordset), like the events: the driver escapes array
  // parameters character by character, and a batch can hold thousands of exposures.
  const json = JSON.stringify(list.map((r) => ({ p: r.p, k: r.key, u: r.person, v: r.variant, f: r.first.toISOString(), l: r.last.toISOString() })));
  await tx`INSERT INTO experiment_exposures (project_id, flag_key, person_uuid, variant, first_ts, last_ts)
    SELECT p, k, u, v, f, l FROM json_to_recordset(${json}::text::json) AS x(p bigint, k text, u uuid, v text, f timestamptz, l timestamptz)
    ON CONFLICT (project_id, flag_key, person_uuid, variant) DO UPDATE
      SET first_ts = LEAST(experiment_exposures.first_ts, EXCLUDED.first_ts), last_ts = GREATEST(experiment_exposures.last_ts, EXCLUDED.last_ts)`;
}
