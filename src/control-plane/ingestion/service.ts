/**
 * Ingestion of one batch of captured events (DESIGN.md "Control plane"; spec §4.5, §6), in ONE
 * transaction so that a batch is acknowledged to its node only once all of it is durable.
 *
 * Stages, in order:
 *   1. normalise — malformed events are counted `invalid` and skipped (types.ts);
 *   2. lock      — per-project ingestion locks, ascending (locks.ts);
 *   3. dedupe    — drop uuids seen earlier in the batch or already stored with the same timestamp
 *                  (what a redelivered event carries; the events key, migration 0015; dedupe.ts): a
 *                  duplicate has no further effect, so redelivery (at-least-once from the node) is harmless;
 *   4. persons   — per event, in batch order, on an in-memory copy loaded in one query and
 *                  written back in bulk (persons.ts), giving each event its person uuid;
 *   5. groups    — `$groupidentify` and `$groups` type mappings (groups.ts);
 *   6. events    — one `COPY` (events-copy.ts: no conflict is possible under the lock after the
 *                  dedupe; the month partitions it needs are created first: event-partitions.ts),
 *                  then the events' `person_event_times` rows grouped here, COPYed for persons
 *                  the batch created and upserted for the others (person-event-times.ts). Should
 *                  a COPY fail (here or in stage 4), the batch is rerun once on the statement
 *                  path: one `INSERT … ON CONFLICT DO NOTHING` that folds the inserted events in
 *                  the same statement (and statements for persons), which reports Postgres' own
 *                  error;
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
import type { Sql, Tx } from '../db/connect.js';
import { deadLetterOf, writeDeadLetters, type DeadLetter } from './dead-letter.js';
import { eventProblem } from '../../contract/event-bounds.js';
import { ensureEventPartitions } from './event-partitions.js';
import { ChangeSet } from './changes.js';
import { storedEvents } from './dedupe.js';
import { recordEventDefinitions } from './definitions.js';
import { foldEventTimes, insertFoldingTimes } from './person-event-times.js';
import { copyEvents, CopyFailed, CopySession } from './events-copy.js';
import { recordExposures } from './exposures.js';
import { recordFlagUsage } from './flag-usage.js';
import { processGroups, type GroupTypeCache } from './groups.js';
import { lockProjects } from './locks.js';
import { writeHashKeyOverridesTx } from './hash-key-overrides.js';
import { isHashKeyOverrideEvent, parseHashKeyOverrideRecord, type HashKeyOverrideRecord } from '../../contract/override-records.js';
import { PersonBatch } from './persons.js';
import type { RefusedUpdates } from './properties.js';
import { normalizeEvent, type IngestEvent } from '../../contract/events.js';

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
  /** Events set aside in `dead_letter_events` (dead-letter.ts), when any. */
  deadLettered?: number;
  /** Those dead letters (for the caller's log lines). */
  deadLetters?: DeadLetter[];
  /** Person or group property updates not applied because the result would exceed MAX_PROPERTIES_BYTES. */
  propertiesRefused?: number;
}

/**
 * Ingests `events` (CapturedEvent values, as decoded from a node's batch) in one transaction.
 * Resolves after commit; rejects (and rolls back everything) on a database error.
 */
export async function ingestEvents(sql: Sql, events: readonly unknown[], dead: readonly DeadLetter[] = []): Promise<IngestResult> {
  try {
    return await ingestOnce(sql, events, dead, true);
  } catch (err) {
    // 25P02 (transaction aborted) too: a statement that ran after a refused COPY.
    if (!(err instanceof CopyFailed) && (err as { code?: unknown } | null)?.code !== '25P02') throw err;
    return ingestOnce(sql, events, dead, false);
  }
}

/** {@link ingestEvents} with the events written by COPY (`copy`) or by the statement path (module doc, stage 6). */
async function ingestOnce(sql: Sql, events: readonly unknown[], dead: readonly DeadLetter[], copy: boolean): Promise<IngestResult> {
  let valid: IngestEvent[] = [];
  let records: HashKeyOverrideRecord[] = [];
  let invalid = 0;
  const deadLetters: DeadLetter[] = [...dead];
  for (const raw of events) {
    if (isHashKeyOverrideEvent(raw)) {
      const r = parseHashKeyOverrideRecord(raw);
      if (r) records.push(r);
      else invalid++;
      continue;
    }
    const ev = normalizeEvent(raw);
    if (!ev) { invalid++; continue; }
    const problem = eventProblem(ev);
    if (problem) deadLetters.push(deadLetterOf(raw, `${problem.field} ${problem.reason}`));
    else valid.push(ev);
  }
  const withDead = (r: IngestResult): IngestResult =>
    (deadLetters.length === 0 ? r : { ...r, deadLettered: deadLetters.length, deadLetters });
  if (valid.length === 0 && records.length === 0) {
    if (deadLetters.length > 0) await writeDeadLetters(sql, deadLetters);
    return withDead({ inserted: 0, duplicates: 0, invalid });
  }
  await ensureEventPartitions(sql, valid.map((e) => e.timestamp));
  return sql.begin(async (tx) => {
    await writeDeadLetters(tx, deadLetters);
    return withDead(await ingestValid(tx, valid, records, invalid, copy));
  }) as Promise<IngestResult>;
}

/**
 * Ingests a batch so that one event that can never be stored does not hold up the others: the whole batch in one transaction first (the fast, normal path); if that
 * fails with an error the data causes ({@link isDeterministic}), event by event, each in its
 * own transaction, and an event that still fails that way is dead-lettered with the database's
 * message. A transient error (connection, serialization, deadlock) fails the batch, so the
 * node retries it; events already stored are then skipped as duplicates by uuid.
 * `dead` are dead letters found before decoding (grpc/ingest.ts), written with the batch.
 */
export async function ingestBatch(sql: Sql, events: readonly unknown[], dead: readonly DeadLetter[] = []): Promise<IngestResult> {
  try {
    return await ingestEvents(sql, events, dead);
  } catch (err) {
    if (!isDeterministic(err) || events.length === 0) throw err;
  }
  const total: IngestResult = { inserted: 0, duplicates: 0, invalid: 0 };
  const letters: DeadLetter[] = [];
  const add = (r: IngestResult): void => {
    total.inserted += r.inserted; total.duplicates += r.duplicates; total.invalid += r.invalid;
    if (r.deadLetters) letters.push(...r.deadLetters);
    if (r.propertiesRefused) total.propertiesRefused = (total.propertiesRefused ?? 0) + r.propertiesRefused;
  };
  add(await ingestEvents(sql, [], dead));
  for (const raw of events) {
    try {
      add(await ingestEvents(sql, [raw]));
    } catch (err) {
      if (!isDeterministic(err)) throw err;
      const letter = deadLetterOf(raw, `database refused the event: ${(err as Error).message}`);
      await writeDeadLetters(sql, [letter]);
      letters.push(letter);
    }
  }
  return letters.length === 0 ? total : { ...total, deadLettered: letters.length, deadLetters: letters };
}

/**
 * True for an error the batch's data causes, which retrying cannot fix: Postgres SQLSTATE
 * classes 22 (data exception: e.g. 22P05 untranslatable character) and 54 (program limit
 * exceeded: e.g. 54000 index row size exceeds btree maximum), or an error thrown by our own
 * code on the data (TypeError, RangeError). Everything else (connection lost, 40001, 40P01,
 * 57P01 …) is transient.
 */
export function isDeterministic(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('22') || code.startsWith('54');
  return err instanceof TypeError || err instanceof RangeError;
}

/** The batch's valid events and override records, inside `tx` (stages 2–8 of the module doc). */
async function ingestValid(tx: Tx, validIn: IngestEvent[], recordsIn: HashKeyOverrideRecord[], invalidIn: number, copy: boolean): Promise<IngestResult> {
  let valid = validIn;
  let records = recordsIn;
  let invalid = invalidIn;
  {
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
    const seen = valid.length === 0 ? new Set<string>() : await storedEvents(tx, valid);
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
    const refused: RefusedUpdates = { count: 0 };
    let inserted = 0;
    if (fresh.length > 0) {
      const groupTypes: GroupTypeCache = new Map();
      const copies = copy ? new CopySession(tx) : null;
      const persons = new PersonBatch(tx, changes, refused, copies);
      await persons.preload(fresh);
      const personIds: (string | null)[] = [];
      for (const ev of fresh) {
        personIds.push(await persons.process(ev));
        await processGroups(tx, changes, groupTypes, ev, refused);
      }
      await persons.flush();
      if (copies) {
        const isos = fresh.map((e) => e.timestamp.toISOString());
        await copyEvents(copies, fresh, personIds, isos);
        inserted = fresh.length;
        await foldEventTimes(tx, copies, fresh, personIds, isos, persons.createdUuids);
        await copies.settle();
      } else {
        // Rows travel as one JSON text (json_to_recordset): the driver escapes array parameters
        // character by character, which cost more than the statement itself at 10,000 events.
        const eventRows = JSON.stringify(fresh.map((e, i) => ({
          p: e.projectId, u: e.uuid, e: e.event, d: e.distinctId, pid: personIds[i], props: e.properties, t: e.timestamp.toISOString(),
        })));
        // The inserted events are folded into the per-person event times in the same statement.
        const [folded] = await insertFoldingTimes(tx, tx`
          INSERT INTO events (project_id, uuid, event, distinct_id, person_id, properties, timestamp)
          SELECT p, u, e, d, pid, props, t
          FROM json_to_recordset(${eventRows}::text::json) AS v(p bigint, u uuid, e text, d text, pid uuid, props jsonb, t timestamptz)
          ON CONFLICT (project_id, uuid, timestamp) DO NOTHING
          RETURNING project_id, event, person_id, timestamp`);
        inserted = folded!.inserted;
      }
      await recordEventDefinitions(tx, fresh);
      await recordFlagUsage(tx, fresh);
      await recordExposures(tx, fresh, personIds);
    }
    let overridesWritten = 0;
    for (const r of records) {
      overridesWritten += await writeHashKeyOverridesTx(tx, changes, r.projectId, r.distinctIds, r.flagKeys, r.hashKey);
    }
    await changes.flush(tx);
    const result: IngestResult = { inserted, duplicates: duplicates + (fresh.length - inserted), invalid };
    if (records.length > 0) { result.overrideRecords = records.length; result.overridesWritten = overridesWritten; }
    if (refused.count > 0) result.propertiesRefused = refused.count;
    return result;
  }
}
