/**
 * Person change-log entries of an ingestion batch equal the persons as Postgres holds them after
 * commit, whether the entry was built from the batch's memory (persons it created) or read back
 * (persons loaded from earlier batches, and everything once a merge ran): changes.ts, persons.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

let db: TestDatabase;
let projectId: number;

before(async () => {
  db = await createTestDatabase();
  const [org] = await db.sql<{ id: number }[]>`INSERT INTO organizations (name) VALUES ('o') RETURNING id`;
  const [p] = await db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token) VALUES (${org!.id}, 'p', 'phc_change_entries') RETURNING id`;
  projectId = p!.id;
});
after(async () => { await db.drop(); });

let clock = Date.parse('2026-02-01T00:00:00Z');
function ev(event: string, distinctId: string, properties: Record<string, unknown> = {}) {
  clock += 1000;
  return { uuid: crypto.randomUUID(), project_id: projectId, event, distinct_id: distinctId, properties, timestamp: new Date(clock).toISOString() };
}

/** The person upserts the batch appended, by person uuid, beside each person's rows read after commit. */
async function entriesAndRows(after: number) {
  const entries = await db.sql<{ entity_id: string; payload: Record<string, unknown> }[]>`
    SELECT entity_id, payload FROM change_log WHERE revision > ${after} AND kind = 'person' AND op = 'upsert' ORDER BY revision`;
  const rows = await db.sql<{ uuid: string; properties: Record<string, unknown>; distinct_ids: string[]; cohort_ids: number[] }[]>`
    SELECT p.uuid, p.properties,
      (SELECT array_agg(d.distinct_id ORDER BY d.distinct_id) FROM person_distinct_ids d WHERE d.person_id = p.id) AS distinct_ids,
      (SELECT array_agg(c.cohort_id::int ORDER BY c.cohort_id) FROM cohort_people c WHERE c.person_id = p.id) AS cohort_ids
    FROM persons p WHERE p.uuid = ANY(${entries.map((e) => e.entity_id)}::uuid[])`;
  const expected = new Map(rows.map((r) => [r.uuid, {
    id: r.uuid, project_id: projectId, distinct_ids: r.distinct_ids, properties: r.properties, ...(r.cohort_ids ? { cohort_ids: r.cohort_ids } : {}),
  }]));
  return { entries, expected };
}

async function head(): Promise<number> {
  const [r] = await db.sql<{ r: number | null }[]>`SELECT max(revision)::int AS r FROM change_log`;
  return r?.r ?? 0;
}

test('entries of new persons (built from memory) and of loaded ones (read back) match the stored persons', async () => {
  await ingestEvents(db.sql, [ev('$identify', 'old-user', { $set: { plan: 'free', n: 1 } })]);
  const before = await head();
  await ingestEvents(db.sql, [
    ev('$pageview', 'new-a', { $set: { plan: 'pro' }, $set_once: { first: 'x' } }),
    ev('$identify', 'new-b', { $anon_distinct_id: 'anon-b', $set: { email: 'b@example.com' } }),
    ev('$create_alias', 'new-b', { alias: 'alias-b' }),
    ev('$pageview', 'new-a', { $set: { plan: 'enterprise', n: 2.5 }, $unset: ['first'] }),
    ev('$identify', 'old-user', { $anon_distinct_id: 'old-anon', $set: { n: 3 } }),
    ev('$pageview', 'personless', { $process_person_profile: false }),
  ]);
  const { entries, expected } = await entriesAndRows(before);
  assert.equal(entries.length, 3, 'one entry per changed person');
  for (const e of entries) assert.deepEqual(e.payload, expected.get(e.entity_id), e.entity_id);
  const b = entries.find((e) => (e.payload.distinct_ids as string[]).includes('new-b'))!;
  assert.deepEqual(b.payload.distinct_ids, ['alias-b', 'anon-b', 'new-b']);
});

test('after a merge in the batch every entry is read back, and matches the stored persons', async () => {
  await ingestEvents(db.sql, [ev('$pageview', 'm-anon', { $set: { a: 1 } }), ev('$pageview', 'm-user', { $set: { b: 2 } })]);
  const before = await head();
  await ingestEvents(db.sql, [
    ev('$pageview', 'm-new', { $set: { c: 3 } }),
    ev('$identify', 'm-user', { $anon_distinct_id: 'm-anon' }),
    ev('$pageview', 'm-new-2', { $set: { d: 4 } }),
  ]);
  const { entries, expected } = await entriesAndRows(before);
  assert.equal(entries.length, 3);
  for (const e of entries) assert.deepEqual(e.payload, expected.get(e.entity_id), e.entity_id);
  const merged = entries.find((e) => (e.payload.distinct_ids as string[]).includes('m-user'))!;
  assert.deepEqual(merged.payload.distinct_ids, ['m-anon', 'm-user']);
  assert.deepEqual(merged.payload.properties, { a: 1, b: 2 });
});
