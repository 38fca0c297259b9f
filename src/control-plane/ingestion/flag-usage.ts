/**
 * Flag usage from capture: a `$feature_flag_called` event with a string `$feature_flag` key
 * moves that flag's `last_called_at` (spec §6) to the latest event timestamp, capped at now,
 * and never backwards. Only the live (non-deleted) flag with the key is touched. No change-log
 * entry: nodes do not evaluate with `last_called_at`; it feeds F1/F3 and the status (F11).
 */
import type { Tx } from '../db/connect.js';
import { MAX_KEY_CHARS, type IngestEvent } from '../../contract/events.js';

/** Name of the flag-usage event. */
export const FEATURE_FLAG_CALLED = '$feature_flag_called';

/** Updates `last_called_at` for the flags called in `events` (already deduplicated). */
export async function recordFlagUsage(tx: Tx, events: readonly IngestEvent[]): Promise<void> {
  const latest = new Map<string, { projectId: number; key: string; at: Date }>();
  for (const ev of events) {
    if (ev.event !== FEATURE_FLAG_CALLED) continue;
    const key = ev.properties.$feature_flag;
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_CHARS) continue;
    const k = `${ev.projectId}\u0000${key}`;
    const cur = latest.get(k);
    if (!cur) latest.set(k, { projectId: ev.projectId, key, at: ev.timestamp });
    else if (ev.timestamp > cur.at) cur.at = ev.timestamp;
  }
  if (latest.size === 0) return;
  const rows = [...latest.values()];
  await tx`
    UPDATE feature_flags f SET last_called_at = LEAST(v.t, now())
    FROM unnest(${rows.map((r) => r.projectId)}::bigint[], ${rows.map((r) => r.key)}::text[],
      ${rows.map((r) => r.at.toISOString())}::timestamptz[]) AS v(p, k, t)
    WHERE f.project_id = v.p AND f.key = v.k AND NOT f.deleted
      AND (f.last_called_at IS NULL OR f.last_called_at < LEAST(v.t, now()))`;
}
