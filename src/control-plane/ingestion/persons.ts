/**
 * Person processing for one event, PostHog semantics (plugin-server `person-state.ts`):
 *
 * - `$process_person_profile: false` → the event touches no person; it is attributed to the
 *   existing person of its distinct id, if any.
 * - `$identify` with `$anon_distinct_id`, and `$create_alias` with `alias`, first link the two
 *   distinct ids ({@link linkDistinctIds}); then, like every event, the person of `distinct_id`
 *   is created on first sight and receives `$set_once` / `$set` / `$unset`.
 * - Merging two existing persons keeps the person of `distinct_id` ("merge into"), moves the
 *   other's distinct ids, hash-key overrides and static-cohort rows to it, merges properties
 *   with the surviving person's values winning, and deletes the other. A merge is refused when
 *   the other person is already identified or either id is one PostHog treats as illegal.
 *
 * All functions run inside the batch transaction with the project lock held (locks.ts) and
 * record what changed in a {@link ChangeSet}.
 */
import type { Tx } from '../db/connect.js';
import type { ChangeSet } from './changes.js';
import { moveHashKeyOverrides } from './hash-key-overrides.js';
import { applyPropertyUpdates } from './properties.js';
import type { IngestEvent, Properties } from './types.js';

/** A persons row as ingestion reads it. */
interface PersonRow { id: number; uuid: string; properties: Properties; is_identified: boolean; created_at: Date }

/** Distinct ids PostHog never merges on, compared case-insensitively (`isDistinctIdIllegal`). */
const ILLEGAL_IDS_CI = new Set(['anonymous', 'guest', 'distinctid', 'distinct_id', 'id', 'not_authenticated', 'email',
  'undefined', 'true', 'false']);
/** Distinct ids PostHog never merges on, compared exactly. */
const ILLEGAL_IDS = new Set(['[object Object]', 'NaN', 'None', 'none', 'null', '0', 'undefined']);

/** True when `id` must not take part in a merge. */
export function isIllegalMergeId(id: string): boolean {
  const t = id.trim();
  return t.length === 0 || ILLEGAL_IDS.has(t) || ILLEGAL_IDS_CI.has(t.toLowerCase());
}

async function findPerson(tx: Tx, projectId: number, distinctId: string): Promise<PersonRow | null> {
  const [row] = await tx<PersonRow[]>`
    SELECT p.id, p.uuid, p.properties, p.is_identified, p.created_at
    FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
    WHERE d.project_id = ${projectId} AND d.distinct_id = ${distinctId}`;
  return row ?? null;
}

async function createPerson(tx: Tx, projectId: number, distinctIds: string[], properties: Properties,
  isIdentified: boolean, createdAt: Date): Promise<PersonRow> {
  const [row] = await tx<PersonRow[]>`
    INSERT INTO persons (project_id, properties, is_identified, created_at)
    VALUES (${projectId}, ${tx.json(properties as never)}, ${isIdentified}, ${createdAt})
    RETURNING id, uuid, properties, is_identified, created_at`;
  for (const d of distinctIds) {
    await tx`INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) VALUES (${projectId}, ${d}, ${row!.id})`;
  }
  return row!;
}

async function addDistinctId(tx: Tx, projectId: number, person: PersonRow, distinctId: string): Promise<void> {
  await tx`INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) VALUES (${projectId}, ${distinctId}, ${person.id})
    ON CONFLICT (project_id, distinct_id) DO UPDATE SET person_id = EXCLUDED.person_id`;
  if (!person.is_identified) {
    await tx`UPDATE persons SET is_identified = true, version = version + 1 WHERE id = ${person.id}`;
    person.is_identified = true;
  }
}

/**
 * Links `otherId` (the anonymous id of `$identify`, the alias of `$create_alias`) to the person
 * of `intoId`, creating or merging persons as PostHog's `merge` does.
 */
export async function linkDistinctIds(tx: Tx, changes: ChangeSet, projectId: number, otherId: string, intoId: string,
  at: Date): Promise<void> {
  if (otherId === intoId || isIllegalMergeId(otherId) || isIllegalMergeId(intoId)) return;
  const other = await findPerson(tx, projectId, otherId);
  const into = await findPerson(tx, projectId, intoId);
  if (other && !into) {
    await addDistinctId(tx, projectId, other, intoId);
    changes.personChanged(other.id);
  } else if (!other && into) {
    await addDistinctId(tx, projectId, into, otherId);
    changes.personChanged(into.id);
  } else if (!other && !into) {
    const p = await createPerson(tx, projectId, [intoId, otherId], {}, true, at);
    changes.personChanged(p.id);
  } else if (other && into && other.id !== into.id) {
    if (other.is_identified) return; // PostHog refuses to merge an already identified person
    await mergePersons(tx, changes, projectId, other, into);
  }
}

/** Merges person `other` into `into` (see module doc); `other` is deleted. */
async function mergePersons(tx: Tx, changes: ChangeSet, projectId: number, other: PersonRow, into: PersonRow): Promise<void> {
  const properties = { ...other.properties, ...into.properties };
  const createdAt = other.created_at < into.created_at ? other.created_at : into.created_at;
  await tx`UPDATE person_distinct_ids SET person_id = ${into.id} WHERE person_id = ${other.id}`;
  await moveHashKeyOverrides(tx, changes, projectId, other, into);
  await tx`INSERT INTO cohort_people (cohort_id, person_id) SELECT cohort_id, ${into.id} FROM cohort_people
    WHERE person_id = ${other.id} ON CONFLICT DO NOTHING`;
  await tx`DELETE FROM persons WHERE id = ${other.id}`;
  await tx`UPDATE persons SET properties = ${tx.json(properties as never)}, created_at = ${createdAt},
    is_identified = true, version = version + 1 WHERE id = ${into.id}`;
  changes.personDeleted(other.id, other.uuid, projectId);
  changes.personChanged(into.id);
}

/**
 * Runs person processing for `ev` and returns the uuid of its person (null for a personless
 * event whose distinct id has no person).
 */
export async function processPerson(tx: Tx, changes: ChangeSet, ev: IngestEvent): Promise<string | null> {
  const p = ev.properties;
  if (p.$process_person_profile === false) return (await findPerson(tx, ev.projectId, ev.distinctId))?.uuid ?? null;
  if (ev.event === '$identify' && typeof p.$anon_distinct_id === 'string') {
    await linkDistinctIds(tx, changes, ev.projectId, p.$anon_distinct_id, ev.distinctId, ev.timestamp);
  } else if (ev.event === '$create_alias' && (typeof p.alias === 'string' || typeof p.alias === 'number')) {
    await linkDistinctIds(tx, changes, ev.projectId, String(p.alias), ev.distinctId, ev.timestamp);
  }
  const person = await findPerson(tx, ev.projectId, ev.distinctId);
  if (!person) {
    const properties: Properties = {};
    applyPropertyUpdates(properties, p);
    const created = await createPerson(tx, ev.projectId, [ev.distinctId], properties, false, ev.timestamp);
    changes.personChanged(created.id);
    return created.uuid;
  }
  const properties = { ...person.properties };
  if (applyPropertyUpdates(properties, p)) {
    await tx`UPDATE persons SET properties = ${tx.json(properties as never)}, version = version + 1 WHERE id = ${person.id}`;
    changes.personChanged(person.id);
  }
  return person.uuid;
}
