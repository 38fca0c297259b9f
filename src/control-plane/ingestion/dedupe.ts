/**
 * Which events of a batch are already stored (ingestion stage 3, service.ts): an event is the
 * same event when its (project, uuid, timestamp) — the events key, migration 0015 — is stored.
 *
 * The lookup goes to each month partition the batch's timestamps fall in, once, with the
 * batch's projects, uuids and timestamps as arrays (one index scan over the primary key per
 * month), and the exact triples are matched here. Joining the batch to the partitioned parent
 * instead costs a run-time partition pruning and an executor rescan per event: 500 lookups took
 * 4.7–6.0 ms that way against 1.8–2.4 ms (20 M events, warm); in a live-like ingestion run with
 * random v4 uuids the statement went from 11.7 to 9.7 ms per 500-event batch.
 */
import type { Tx } from '../db/connect.js';
import { monthPartition } from './event-partitions.js';
import type { IngestEvent } from '../../contract/events.js';

/** The key an event is deduplicated by. */
const tripleKey = (projectId: number | string, uuid: string, timestamp: Date) => `${projectId}:${uuid}:${timestamp.getTime()}`;

/**
 * `<project>:<uuid>` of every event of `events` already stored with the same timestamp. The
 * month partitions must exist (ensureEventPartitions runs before the batch's transaction).
 * @throws the driver's error when Postgres fails.
 */
export async function storedEvents(tx: Tx, events: readonly IngestEvent[]): Promise<Set<string>> {
  const byMonth = new Map<string, IngestEvent[]>();
  for (const e of events) {
    const table = monthPartition(e.timestamp).name;
    const list = byMonth.get(table);
    if (list) list.push(e); else byMonth.set(table, [e]);
  }
  const wanted = new Set(events.map((e) => tripleKey(e.projectId, e.uuid, e.timestamp)));
  const seen = new Set<string>();
  for (const [table, list] of byMonth) {
    // Arrays travel as one comma-joined text each (uuids, ISO instants and integers hold no
    // comma): the driver escapes array parameters character by character.
    const projects = [...new Set(list.map((e) => e.projectId))].join(',');
    const uuids = list.map((e) => e.uuid).join(',');
    const times = list.map((e) => e.timestamp.toISOString()).join(',');
    const rows = await tx<{ project_id: string; uuid: string; timestamp: Date }[]>`
      SELECT project_id::text AS project_id, uuid::text AS uuid, timestamp FROM ${tx(table)}
      WHERE project_id = ANY(string_to_array(${projects}, ',')::bigint[])
        AND uuid = ANY(string_to_array(${uuids}, ',')::uuid[])
        AND timestamp = ANY(string_to_array(${times}, ',')::timestamptz[])`;
    for (const r of rows) if (wanted.has(tripleKey(r.project_id, r.uuid, r.timestamp))) seen.add(`${r.project_id}:${r.uuid}`);
  }
  return seen;
}
