/**
 * Ingestion of one batch of captured events (DESIGN.md "Control plane"; spec §4.5, §6), in ONE
 * transaction so that a batch is acknowledged to its node only once all of it is durable.
 *
 * Stages, in order:
 *   1. normalise — malformed events are counted `invalid` and skipped (types.ts);
 *   2. lock      — per-project ingestion locks, ascending (locks.ts);
 *   3. dedupe    — drop uuids seen earlier in the batch or already stored: a duplicate has no
 *                  further effect, so redelivery (at-least-once from the node) is harmless;
 *   4. persons   — per event, in batch order, on an in-memory copy loaded in one query and
 *                  written back in bulk (persons.ts), giving each event its person uuid;
 *   5. groups    — `$groupidentify` and `$groups` type mappings (groups.ts);
 *   6. events    — one bulk insert, ON CONFLICT (project_id, uuid) DO NOTHING as a safety net;
 *   7. definitions, flag usage — one statement each for the batch;
 *   8. change log — person / group / override / mapping entries, last (changes.ts).
 *
 * Hash-key override records (override-records.ts: internal `$feature_flag_hash_key_override`
 * events a node's /flags path appends for experience continuity) are split off before stage 1:
 * they are never stored as events nor counted in event definitions. They share the project
 * check and lock, and are applied with `writeHashKeyOverridesTx` after the batch's person work
 * (so persons created or merged by events of the same batch are seen), before the change log.
 * They need no uuid dedupe: inserting where missing is idempotent. Unmarked or malformed ones
 * are counted `invalid`.
 */
import type { Sql } from '../db/connect.js';
import { ChangeSet } from './changes.js';
import { recordEventDefinitions } from './definitions.js';
import { recordFlagUsage } from './flag-usage.js';
import { processGroups, type GroupTypeCache } from './groups.js';
import { lockProjects } from './locks.js';
import { writeHashKeyOverridesTx } from './hash-key-overrides.js';
import { isHashKeyOverrideEvent, parseHashKeyOverrideRecord, type HashKeyOverrideRecord } from './override-records.js';
import { PersonBatch } from './persons.js';
import { normalizeEvent, type IngestEvent } from './types.js';

/** Outcome of {@link ingestEvents}. */
export interface IngestResult {
  /** Events stored now. */
  inserted: number;
  /** Events skipped because their uuid was already stored or repeated within the batch. */
  duplicates: number;
  /** Events skipped because they were malformed (see types.ts `normalizeEvent`). */
  invalid: number;
  /** Hash-key override records applied (not events: never in `inserted`). */
  overrideRecords?: number;
  /** Hash-key override rows those records inserted. */
  overridesWritten?: number;
}

/**
 * Ingests `events` (CapturedEvent values, as decoded from a node's batch) in one transaction.
 * Resolves after commit; rejects (and rolls back everything) on a database error.
 */
export async function ingestEvents(sql: Sql, events: readonly unknown[]): Promise<IngestResult> {
  let valid: IngestEvent[] = [];
  let records: HashKeyOverrideRecord[] = [];
  let invalid = 0;
  for (const raw of events) {
    if (isHashKeyOverrideEvent(raw)) {
      const r = parseHashKeyOverrideRecord(raw);
      if (r) records.push(r);
      else invalid++;
      continue;
    }
    const ev = normalizeEvent(raw);
    if (ev) valid.push(ev);
    else invalid++;
  }
  if (valid.length === 0 && records.length === 0) return { inserted: 0, duplicates: 0, invalid };
  return sql.begin(async (tx) => {
    // Events of unknown projects (deleted since capture, or forged) are invalid, not retried forever.
    const projectIds = new Set([...valid.map((e) => e.projectId), ...records.map((r) => r.projectId)]);
    const known = new Set((await tx<{ id: number }[]>`SELECT id FROM projects
      WHERE id = ANY(${[...projectIds]}::bigint[])`).map((r) => r.id));
    const before = valid.length + records.length;
    valid = valid.filter((e) => known.has(e.projectId));
    records = records.filter((r) => known.has(r.projectId));
    invalid += before - valid.length - records.length;
    if (valid.length === 0 && records.length === 0) return { inserted: 0, duplicates: 0, invalid };
    await lockProjects(tx, known);
    const existing = valid.length === 0 ? [] : await tx<{ project_id: number; uuid: string }[]>`
      SELECT e.project_id, e.uuid FROM events e
      JOIN unnest(${valid.map((e) => e.projectId)}::bigint[], ${valid.map((e) => e.uuid)}::uuid[]) AS v(p, u)
        ON e.project_id = v.p AND e.uuid = v.u`;
    const seen = new Set(existing.map((r) => `${r.project_id}:${r.uuid}`));
    const fresh: IngestEvent[] = [];
    for (const ev of valid) {
      const k = `${ev.projectId}:${ev.uuid}`;
      if (seen.has(k)) continue;
      seen.add(k);
      fresh.push(ev);
    }
    const duplicates = valid.length - fresh.length;
    if (fresh.length === 0 && records.length === 0) return { inserted: 0, duplicates, invalid };

    const changes = new ChangeSet();
    let inserted = 0;
    if (fresh.length > 0) {
      const groupTypes: GroupTypeCache = new Map();
      const persons = new PersonBatch(tx, changes);
      await persons.preload(fresh);
      const personIds: (string | null)[] = [];
      for (const ev of fresh) {
        personIds.push(await persons.process(ev));
        await processGroups(tx, changes, groupTypes, ev);
      }
      await persons.flush();
      const rows = await tx<{ uuid: string }[]>`
        INSERT INTO events (project_id, uuid, event, distinct_id, person_id, properties, timestamp)
        SELECT p, u, e, d, pid, props::jsonb, t
        FROM unnest(${fresh.map((e) => e.projectId)}::bigint[], ${fresh.map((e) => e.uuid)}::uuid[],
          ${fresh.map((e) => e.event)}::text[], ${fresh.map((e) => e.distinctId)}::text[], ${personIds}::uuid[],
          ${fresh.map((e) => JSON.stringify(e.properties))}::text[], ${fresh.map((e) => e.timestamp.toISOString())}::timestamptz[])
          AS v(p, u, e, d, pid, props, t)
        ON CONFLICT (project_id, uuid) DO NOTHING
        RETURNING uuid`;
      inserted = rows.length;
      await recordEventDefinitions(tx, fresh);
      await recordFlagUsage(tx, fresh);
    }
    let overridesWritten = 0;
    for (const r of records) {
      overridesWritten += await writeHashKeyOverridesTx(tx, changes, r.projectId, r.distinctIds, r.flagKeys, r.hashKey);
    }
    await changes.flush(tx);
    const result: IngestResult = { inserted, duplicates: duplicates + (fresh.length - inserted), invalid };
    if (records.length > 0) { result.overrideRecords = records.length; result.overridesWritten = overridesWritten; }
    return result;
  }) as Promise<IngestResult>;
}
