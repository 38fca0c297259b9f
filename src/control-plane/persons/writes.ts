/**
 * Changes to persons through the management API: set and remove properties, delete (optionally
 * with the person's events), split. PostHog does these asynchronously (a `$set` event through
 * capture, a queued deletion, a Celery split task); here each is one transaction that is done when
 * the answer is sent.
 *
 * Every write takes the project's ingestion lock first (ingestion/locks.ts), as ingestion does, so
 * an ingestion batch never works from a person state this write changed underneath it; and ends
 * by appending the person changes to the change log through the same {@link ChangeSet} ingestion
 * uses (ingestion/changes.ts), so every evaluation node applies them over its gRPC stream: an
 * upsert with the new properties and distinct ids, or a delete of the person's uuid (with deletes
 * of its hash-key overrides).
 */
import crypto from 'node:crypto';
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import { isJsonObject } from '../../json-shapes.js';
import { MAX_PROPERTIES_BYTES } from '../../limits.js';
import { ChangeSet } from '../ingestion/changes.js';
import { lockProjects } from '../ingestion/locks.js';
import { withinPropertiesBound } from '../ingestion/properties.js';
import { distinctIdsOf, eventPersonUuids, findPerson, type PersonRow } from './lookup.js';

/** Runs `fn` on the locked person `raw` of `projectId`, then appends its changes. @throws ApiError 404 when there is none. */
async function withPerson<T>(sql: Sql, projectId: number, raw: string, fn: (tx: Tx, p: PersonRow, changes: ChangeSet) => Promise<T>): Promise<T> {
  return sql.begin(async (tx) => {
    await lockProjects(tx, [projectId]);
    const person = await findPerson(tx, projectId, raw, true);
    if (!person) throw errors.notFound();
    const changes = new ChangeSet();
    const out = await fn(tx, person, changes);
    await changes.flush(tx);
    return out;
  }) as Promise<T>;
}

/**
 * `$set` of `properties` onto the person (PostHog `PATCH /persons/:id/` and `update_property`):
 * listed keys are replaced, others kept.
 * @throws ApiError 400 when `properties` is not an object or the result exceeds MAX_PROPERTIES_BYTES; 404.
 */
export async function setPersonProperties(sql: Sql, projectId: number, raw: string, properties: unknown): Promise<void> {
  if (!isJsonObject(properties)) throw errors.validation('Expected a dictionary of items.', 'properties', 'not_a_dict');
  await withPerson(sql, projectId, raw, async (tx, p, changes) => {
    const next = { ...p.properties, ...properties };
    if (!withinPropertiesBound(next)) {
      throw errors.validation(`The person's properties would exceed ${MAX_PROPERTIES_BYTES} bytes.`, 'properties');
    }
    await tx`UPDATE persons SET properties = ${tx.json(next as never)}, version = version + 1 WHERE id = ${p.id}`;
    changes.personChanged(p.id);
  });
}

/** Removes property `key` (PostHog `delete_property`'s `$unset`). @throws ApiError 404. */
export async function unsetPersonProperty(sql: Sql, projectId: number, raw: string, key: string): Promise<void> {
  await withPerson(sql, projectId, raw, async (tx, p, changes) => {
    await tx`UPDATE persons SET properties = properties - ${key}::text, version = version + 1 WHERE id = ${p.id}`;
    changes.personChanged(p.id);
  });
}

/**
 * Deletes the person, its distinct ids (a later event of one creates a new person, as PostHog's
 * deletion resets them), its hash-key overrides and static-cohort rows. With `deleteEvents`, also
 * every event carrying its uuid or that of a person merged into it, their per-person
 * pre-aggregates (person_event_times, experiment_exposures) and its merge records.
 * @returns the number of events deleted. @throws ApiError 404.
 */
export async function deletePerson(sql: Sql, projectId: number, raw: string, deleteEvents: boolean): Promise<number> {
  return withPerson(sql, projectId, raw, async (tx, p, changes) => {
    let events = 0;
    if (deleteEvents) {
      const uuids = await eventPersonUuids(tx, projectId, p.uuid);
      const [r] = await tx<{ n: number }[]>`
        WITH gone AS (
          DELETE FROM events WHERE project_id = ${projectId} AND person_id = ANY(${uuids}::uuid[])
          RETURNING event, date_trunc('month', timestamp AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month,
            CASE WHEN event = '$feature_flag_called' THEN left(properties->>'$feature_flag', 400) END AS flag
        ), times AS (
          DELETE FROM person_event_times t USING (SELECT DISTINCT event, month FROM gone) g
          WHERE t.project_id = ${projectId} AND t.event = g.event AND t.month = g.month AND t.person_id = ANY(${uuids}::uuid[])
        ), exposures AS (
          DELETE FROM experiment_exposures x USING (SELECT DISTINCT flag FROM gone WHERE flag IS NOT NULL) f
          WHERE x.project_id = ${projectId} AND x.flag_key = f.flag AND x.person_uuid = ANY(${uuids}::uuid[])
        )
        SELECT count(*)::int AS n FROM gone`;
      events = r!.n;
      await tx`DELETE FROM person_overrides WHERE project_id = ${projectId} AND override_person_uuid = ${p.uuid}::uuid`;
    }
    const overrides = await tx<{ feature_flag_key: string }[]>`
      DELETE FROM feature_flag_hash_key_overrides WHERE person_id = ${p.id} RETURNING feature_flag_key`;
    for (const o of overrides) changes.overrideDeleted(projectId, p.uuid, o.feature_flag_key);
    await tx`DELETE FROM person_distinct_ids WHERE project_id = ${projectId} AND person_id = ${p.id}`;
    await tx`DELETE FROM persons WHERE id = ${p.id}`;
    changes.personDeleted(p.id, p.uuid, projectId);
    return events;
  });
}

/** What a split moves: PostHog's two mutually exclusive request fields. */
export interface SplitRequest { main_distinct_id?: unknown; distinct_ids_to_split?: unknown }

/**
 * Moves distinct ids off the person, each onto a new person of its own with no properties
 * (PostHog `split_person`): `distinct_ids_to_split` moves those; otherwise every id but
 * `main_distinct_id` (default: the first in display order) moves. The person keeps its
 * properties, hash-key overrides and cohort rows; events keep the person they were ingested with.
 * @returns the uuids of the new persons. @throws ApiError 400 (PostHog's checks, and a split that
 *   would leave the person without a distinct id); 404.
 */
export async function splitPerson(sql: Sql, projectId: number, raw: string, body: SplitRequest): Promise<string[]> {
  const main = body.main_distinct_id ?? null;
  const listed = body.distinct_ids_to_split ?? null;
  if (main !== null && typeof main !== 'string') throw errors.validation('Not a valid string.', 'main_distinct_id');
  if (listed !== null) {
    if (!Array.isArray(listed) || !listed.every((d) => typeof d === 'string')) throw errors.validation('must be a list of strings', 'distinct_ids_to_split');
    if (listed.length === 0) throw errors.validation('must not be empty', 'distinct_ids_to_split');
    if (main !== null) throw errors.validation('main_distinct_id cannot be combined with distinct_ids_to_split');
  }
  return withPerson(sql, projectId, raw, async (tx, p, changes) => {
    const ids = await distinctIdsOf(tx, projectId, p.id);
    let move: string[];
    if (listed !== null) {
      const unknown = [...new Set(listed as string[])].filter((d) => !ids.includes(d)).sort();
      if (unknown.length > 0) throw errors.validation(`not on this person: ${JSON.stringify(unknown)}`, 'distinct_ids_to_split');
      move = [...new Set(listed as string[])];
    } else {
      const keep = main ?? ids[0];
      if (main !== null && !ids.includes(main)) throw errors.validation(`not on this person: ${JSON.stringify(main)}`, 'main_distinct_id');
      move = ids.filter((d) => d !== keep);
    }
    if (move.length === 0) return [];
    if (move.length >= ids.length) throw errors.validation('At least one distinct id must stay on the person.', 'distinct_ids_to_split');
    const fresh = move.map((d) => ({ u: crypto.randomUUID(), d }));
    const inserted = await tx<{ id: number; uuid: string }[]>`
      INSERT INTO persons (uuid, project_id, properties, is_identified)
      SELECT v.u, ${projectId}, '{}'::jsonb, false FROM json_to_recordset(${JSON.stringify(fresh)}::text::json) AS v(u uuid, d text)
      RETURNING id, uuid::text AS uuid`;
    const idOf = new Map(inserted.map((r) => [r.uuid, r.id]));
    const created = fresh.map((f) => ({ id: idOf.get(f.u)!, uuid: f.u, distinct_id: f.d }));
    await tx`
      UPDATE person_distinct_ids SET person_id = v.pid
      FROM json_to_recordset(${JSON.stringify(created.map((c) => ({ d: c.distinct_id, pid: c.id })))}::text::json) AS v(d text, pid bigint)
      WHERE project_id = ${projectId} AND distinct_id = v.d`;
    await tx`UPDATE persons SET version = version + 1 WHERE id = ${p.id}`;
    changes.personChanged(p.id);
    for (const c of created) changes.personChanged(c.id);
    return created.map((c) => c.uuid);
  });
}
