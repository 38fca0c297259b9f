/**
 * Event definitions from capture: one upsert per (project, event name) per batch.
 * `created_at` is set when a name is first seen (ingestion time); `last_seen_at` is the
 * latest event timestamp seen, capped at now (a client clock in the future must not pin it)
 * and never moved backwards. Daily counts go to `event_volume_daily`; a definition's
 * `volume_30_day` is the sum of its last 30 days, computed on read (event-definitions/store.ts).
 */
import type { Tx } from '../db/connect.js';
import type { IngestEvent } from '../../contract/events.js';

/** Upserts the definitions and daily volumes of `events` (already deduplicated). */
export async function recordEventDefinitions(tx: Tx, events: readonly IngestEvent[]): Promise<void> {
  if (events.length === 0) return;
  const seen = new Map<string, { projectId: number; name: string; last: Date }>();
  const volume = new Map<string, { projectId: number; name: string; day: string; count: number }>();
  for (const ev of events) {
    const k = `${ev.projectId}\u0000${ev.event}`;
    const s = seen.get(k);
    if (!s) seen.set(k, { projectId: ev.projectId, name: ev.event, last: ev.timestamp });
    else if (ev.timestamp > s.last) s.last = ev.timestamp;
    const day = ev.timestamp.toISOString().slice(0, 10);
    const vk = `${k}\u0000${day}`;
    const v = volume.get(vk);
    if (v) v.count++;
    else volume.set(vk, { projectId: ev.projectId, name: ev.event, day, count: 1 });
  }
  const defs = [...seen.values()].sort((a, b) => a.projectId - b.projectId || (a.name < b.name ? -1 : 1));
  await tx`
    INSERT INTO event_definitions AS d (project_id, name, created_at, last_seen_at)
    SELECT v.p, v.n, now(), LEAST(v.t, now())
    FROM unnest(${defs.map((d) => d.projectId)}::bigint[], ${defs.map((d) => d.name)}::text[],
      ${defs.map((d) => d.last.toISOString())}::timestamptz[]) AS v(p, n, t)
    ON CONFLICT (project_id, name) DO UPDATE
      SET last_seen_at = GREATEST(d.last_seen_at, EXCLUDED.last_seen_at), created_at = COALESCE(d.created_at, now())
      WHERE d.last_seen_at IS NULL OR d.last_seen_at < EXCLUDED.last_seen_at OR d.created_at IS NULL`;
  const vols = [...volume.values()];
  await tx`
    INSERT INTO event_volume_daily AS e (project_id, event, day, count)
    SELECT * FROM unnest(${vols.map((v) => v.projectId)}::bigint[], ${vols.map((v) => v.name)}::text[],
      ${vols.map((v) => v.day)}::date[], ${vols.map((v) => v.count)}::bigint[])
    ON CONFLICT (project_id, event, day) DO UPDATE SET count = e.count + EXCLUDED.count`;
}
