/** Ingestion over real Postgres: exactly-once effects, person/group rules, change-log entries. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { writeHashKeyOverrides } from '../../../src/control-plane/ingestion/hash-key-overrides.js';
import { HASH_KEY_OVERRIDE_EVENT, hashKeyOverrideRecord } from '../../../src/contract/override-records.js';
import { seedOrganization, seedProject } from '../../support/seed.js';

let db: TestDatabase;
let projectId: number;
let otherProjectId: number;

before(async () => {
  db = await createTestDatabase();
  const [org] = await db.sql<{ id: number }[]>`INSERT INTO organizations (name) VALUES ('o') RETURNING id`;
  const [p] = await db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${org!.id}, 'p', 'phc_ingest_test_1') RETURNING id`;
  const [p2] = await db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token)
    VALUES (${org!.id}, 'p2', 'phc_ingest_test_2') RETURNING id`;
  projectId = p!.id;
  otherProjectId = p2!.id;
});
after(async () => { await db.drop(); });

let clock = Date.parse('2026-01-01T00:00:00Z');
function ev(event: string, distinctId: string, properties: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  clock += 1000;
  return { uuid: crypto.randomUUID(), project_id: projectId, event, distinct_id: distinctId, properties,
    timestamp: new Date(clock).toISOString(), ...extra };
}

async function personOf(distinctId: string, project = projectId) {
  const [row] = await db.sql<{ id: number; uuid: string; properties: Record<string, unknown>; is_identified: boolean; distinct_ids: string[] }[]>`
    SELECT p.id, p.uuid, p.properties, p.is_identified,
      (SELECT array_agg(d2.distinct_id ORDER BY d2.distinct_id) FROM person_distinct_ids d2 WHERE d2.person_id = p.id) AS distinct_ids
    FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
    WHERE d.project_id = ${project} AND d.distinct_id = ${distinctId}`;
  return row ?? null;
}

async function changesSince(revision: number) {
  return [...await db.sql<{ revision: number; kind: string; entity_id: string; op: string; payload: any }[]>`
    SELECT revision, kind, entity_id, op, payload FROM change_log WHERE revision > ${revision} ORDER BY revision`].map((r) => ({ ...r }));
}
async function maxRevision(): Promise<number> {
  const [r] = await db.sql<{ r: number | null }[]>`SELECT max(revision) AS r FROM change_log`;
  return r?.r ?? 0;
}

test('a batch with duplicate uuids stores each event once; a redelivered batch has no effect', async () => {
  const a = ev('signup', 'dup-user', { $set: { plan: 'free' } });
  const b = ev('$feature_flag_called', 'dup-user', { $feature_flag: 'nope' });
  const r1 = await ingestEvents(db.sql, [a, b, { ...a }]);
  assert.deepEqual(r1, { inserted: 2, duplicates: 1, invalid: 0 });
  const rev = await maxRevision();
  const r2 = await ingestEvents(db.sql, [a, b]);
  assert.deepEqual(r2, { inserted: 0, duplicates: 2, invalid: 0 });
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE distinct_id = 'dup-user'`;
  assert.equal(n, 2);
  assert.deepEqual(await changesSince(rev), [], 'redelivery appends no change');
  const [vol] = await db.sql<{ count: number }[]>`SELECT count FROM event_volume_daily WHERE project_id = ${projectId} AND event = 'signup'`;
  assert.equal(Number(vol!.count), 1);
});

test('the same uuid in another project is a different event', async () => {
  const a = ev('x', 'u-proj');
  const r = await ingestEvents(db.sql, [a, { ...a, project_id: otherProjectId }]);
  assert.equal(r.inserted, 2);
});

test('the same uuid with another timestamp, in a later batch, is another event (the events key); each is deduplicated on redelivery, across months', async () => {
  const a = { ...ev('x', 'u-times'), timestamp: '2026-10-31T23:59:59.999Z' };
  const b = { ...a, timestamp: '2026-11-01T00:00:00.000Z' };
  const c = { ...a, timestamp: '2026-11-02T10:00:00.000Z' };
  assert.equal((await ingestEvents(db.sql, [a])).inserted, 1);
  assert.equal((await ingestEvents(db.sql, [b])).inserted, 1, 'b, a month later, is new');
  assert.equal((await ingestEvents(db.sql, [c])).inserted, 1, 'c, the same month as b, is new');
  for (const e of [a, b, c]) assert.deepEqual(await ingestEvents(db.sql, [e]), { inserted: 0, duplicates: 1, invalid: 0 });
  const again = await ingestEvents(db.sql, [c, b, a]);
  assert.deepEqual([again.inserted, again.duplicates], [0, 3]);
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE uuid = ${a.uuid}`;
  assert.equal(n, 3);
});

test('malformed events and unknown projects are counted invalid and skipped', async () => {
  const cases = [
    { ...ev('x', 'u'), uuid: 'not-a-uuid' },
    { ...ev('x', 'u'), event: '' },
    { ...ev('x', 'u'), distinct_id: '' },
    { ...ev('x', 'u'), timestamp: 'yesterday' },
    { ...ev('x', 'u'), project_id: 987654 },
    null,
  ];
  const r = await ingestEvents(db.sql, [...cases, ev('ok-event', 'u-ok')]);
  assert.deepEqual(r, { inserted: 1, duplicates: 0, invalid: 6 });
});

test('events carry the person uuid; personless events create no person', async () => {
  const a = ev('pageview', 'pl-user', { $process_person_profile: false, $set: { a: 1 } });
  await ingestEvents(db.sql, [a]);
  assert.equal(await personOf('pl-user'), null);
  const [e1] = await db.sql<{ person_id: string | null }[]>`SELECT person_id FROM events WHERE uuid = ${a.uuid}`;
  assert.equal(e1!.person_id, null);
  const b = ev('pageview', 'pl-user');
  await ingestEvents(db.sql, [b]);
  const person = await personOf('pl-user');
  const [e2] = await db.sql<{ person_id: string | null }[]>`SELECT person_id FROM events WHERE uuid = ${b.uuid}`;
  assert.equal(e2!.person_id, person!.uuid);
});

test('$set, $set_once and $unset follow PostHog order within and across events', async () => {
  const cases: { name: string; events: Record<string, unknown>[]; want: Record<string, unknown> }[] = [
    { name: 'first event creates the person with $set_once then $set', events: [{ $set_once: { a: 1, b: 1 }, $set: { b: 2 } }], want: { a: 1, b: 2 } },
    { name: '$set_once never overwrites', events: [{ $set: { a: 1 } }, { $set_once: { a: 2, c: 3 } }], want: { a: 1, c: 3 } },
    { name: '$set overwrites', events: [{ $set: { a: 1 } }, { $set: { a: 'x' } }], want: { a: 'x' } },
    { name: '$unset as a list removes keys', events: [{ $set: { a: 1, b: 2 } }, { $unset: ['a', 'missing'] }], want: { b: 2 } },
    { name: '$unset as an object removes its keys', events: [{ $set: { a: 1, b: 2 } }, { $unset: { b: null } }], want: { a: 1 } },
    { name: '$unset wins over $set in the same event', events: [{ $set: { a: 1 }, $unset: ['a'] }], want: {} },
    { name: 'nested values compare by content', events: [{ $set: { o: { x: [1, 2] } } }, { $set: { o: { x: [1, 3] } } }], want: { o: { x: [1, 3] } } },
  ];
  for (const c of cases) {
    const id = `props-${crypto.randomUUID()}`;
    await ingestEvents(db.sql, c.events.map((p) => ev('e', id, p)));
    assert.deepEqual((await personOf(id))!.properties, c.want, c.name);
  }
});

test('top-level $set / $set_once are merged into properties', async () => {
  const id = `top-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('e', id, { $set: { a: 1 } }, { $set: { b: 2 }, $set_once: { c: 3 } })]);
  assert.deepEqual((await personOf(id))!.properties, { a: 1, b: 2, c: 3 });
});

test('person changes enter the change log once per batch with the final state', async () => {
  const rev = await maxRevision();
  const id = `cl-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('e', id, { $set: { a: 1 } }), ev('e', id, { $set: { a: 2 } }), ev('e', id)]);
  const person = await personOf(id);
  const changes = (await changesSince(rev)).filter((c) => c.kind === 'person');
  assert.equal(changes.length, 1);
  assert.deepEqual(changes[0]!, { ...changes[0]!, entity_id: person!.uuid, op: 'upsert',
    payload: { id: person!.uuid, project_id: projectId, distinct_ids: [id], properties: { a: 2 } } });
  const rev2 = await maxRevision();
  await ingestEvents(db.sql, [ev('e', id, { $set: { a: 2 } })]);
  assert.deepEqual(await changesSince(rev2), [], 'no change → no entry');
});

test('events that change no person leave its properties whole, in a batch beside events that do, through any of its distinct ids', async () => {
  const t = crypto.randomUUID();
  const [a, a2, b, c, anon] = ['a', 'a2', 'b', 'c', 'anon'].map((x) => `np-${x}-${t}`);
  // Stored persons: A (two distinct ids), B and C, each with properties.
  await ingestEvents(db.sql, [ev('e', a, { $set: { keep: 'a', n: 1 } }), ev('$identify', a, { $anon_distinct_id: a2 }),
    ev('e', b, { $set: { keep: 'b' } }), ev('e', c, { $set: { keep: 'c' } })]);
  assert.deepEqual((await personOf(a2))!.distinct_ids, [a, a2].sort());
  const rev = await maxRevision();
  await ingestEvents(db.sql, [
    ev('$pageview', a), // A named by an event that changes nothing first…
    ev('e', a2, { $set: { n: 2 } }), // …then updated through its other distinct id
    ev('$pageview', b), // B only named: never read, never written
    ev('$pageview', c), ev('e', c, { $unset: ['missing'] }), // C: an update that changes nothing
    ev('$identify', c, { $anon_distinct_id: anon }), // and a link that marks C identified
  ]);
  assert.deepEqual((await personOf(a))!.properties, { keep: 'a', n: 2 });
  assert.deepEqual((await personOf(b))!.properties, { keep: 'b' });
  const pc = (await personOf(anon))!;
  assert.deepEqual(pc.properties, { keep: 'c' });
  assert.equal(pc.is_identified, true);
  assert.deepEqual(pc.distinct_ids, [anon, c].sort());
  const changed = (await changesSince(rev)).filter((x) => x.kind === 'person').map((x) => (x.payload as { properties: { keep: string } }).properties);
  assert.deepEqual(changed.sort((x, y) => (x.keep < y.keep ? -1 : 1)), [{ keep: 'a', n: 2 }, { keep: 'c' }],
    'A and C enter the change log with their whole properties; B does not');
});

test('$identify merges the anonymous person into the identified one', async () => {
  const anon = `anon-${crypto.randomUUID()}`;
  const user = `user-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [
    ev('pageview', anon, { $set: { plan: 'anon-plan', only_anon: true } }),
    ev('pageview', user, { $set: { plan: 'user-plan', only_user: true } }),
  ]);
  const anonPerson = (await personOf(anon))!;
  const userPerson = (await personOf(user))!;
  await db.sql`INSERT INTO feature_flag_hash_key_overrides (project_id, person_id, feature_flag_key, hash_key) VALUES
    (${projectId}, ${anonPerson.id}, 'flag-a', ${anon}), (${projectId}, ${anonPerson.id}, 'flag-b', ${anon}),
    (${projectId}, ${userPerson.id}, 'flag-b', 'user-hash')`;
  const rev = await maxRevision();
  await ingestEvents(db.sql, [ev('$identify', user, { $anon_distinct_id: anon, $set: { email: 'a@b.c' } })]);
  const merged = (await personOf(anon))!;
  assert.equal(merged.uuid, userPerson.uuid, 'the identified person survives');
  assert.deepEqual(merged.distinct_ids, [anon, user].sort());
  assert.deepEqual(merged.properties, { plan: 'user-plan', only_anon: true, only_user: true, email: 'a@b.c' });
  assert.equal(merged.is_identified, true);
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM persons WHERE uuid = ${anonPerson.uuid}`;
  assert.equal(n, 0, 'anonymous person deleted');
  const overrides = await db.sql<{ feature_flag_key: string; hash_key: string }[]>`SELECT feature_flag_key, hash_key
    FROM feature_flag_hash_key_overrides WHERE person_id = ${userPerson.id} ORDER BY feature_flag_key`;
  assert.deepEqual(overrides.map((o) => ({ ...o })), [{ feature_flag_key: 'flag-a', hash_key: anon }, { feature_flag_key: 'flag-b', hash_key: 'user-hash' }]);
  const changes = await changesSince(rev);
  const summary = changes.map((c) => `${c.kind} ${c.op} ${c.entity_id}`);
  assert.deepEqual(summary, [
    `person delete ${anonPerson.uuid}`,
    `hash_key_override delete ${projectId}:${anonPerson.uuid}:flag-a`,
    `hash_key_override delete ${projectId}:${anonPerson.uuid}:flag-b`,
    `person upsert ${userPerson.uuid}`,
    `hash_key_override upsert ${projectId}:${userPerson.uuid}:flag-a`,
  ]);
  assert.deepEqual(changes[3]!.payload.distinct_ids, [anon, user].sort());
  assert.deepEqual(changes[4]!.payload, { project_id: projectId, person_id: userPerson.uuid, feature_flag_key: 'flag-a', hash_key: anon });
});

test('$identify cases without two persons: link, create, refuse', async () => {
  // anonymous person exists, identified id new → the id joins the anonymous person
  const a1 = `anon-${crypto.randomUUID()}`; const u1 = `user-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('pageview', a1, { $set: { x: 1 } })]);
  const before1 = (await personOf(a1))!;
  await ingestEvents(db.sql, [ev('$identify', u1, { $anon_distinct_id: a1 })]);
  assert.equal((await personOf(u1))!.uuid, before1.uuid);
  // neither exists → one person with both ids
  const a2 = `anon-${crypto.randomUUID()}`; const u2 = `user-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('$identify', u2, { $anon_distinct_id: a2, $set: { y: 1 } })]);
  assert.deepEqual((await personOf(a2))!.distinct_ids, [a2, u2].sort());
  assert.deepEqual((await personOf(a2))!.properties, { y: 1 });
  // the other person is already identified → no merge
  const u3 = `user-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('pageview', u3)]);
  await ingestEvents(db.sql, [ev('$identify', u3, { $anon_distinct_id: u2 })]);
  assert.notEqual((await personOf(u3))!.uuid, (await personOf(u2))!.uuid);
  // illegal anonymous ids are never merged
  const u4 = `user-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('$identify', u4, { $anon_distinct_id: 'undefined' })]);
  assert.deepEqual((await personOf(u4))!.distinct_ids, [u4]);
  assert.equal(await personOf('undefined'), null);
});

test('$create_alias links the alias like $identify', async () => {
  const main = `main-${crypto.randomUUID()}`;
  const alias = `alias-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('e', main, { $set: { m: 1 } }), ev('e', alias, { $set: { m: 2, a: 1 } })]);
  const mainPerson = (await personOf(main))!;
  await ingestEvents(db.sql, [ev('$create_alias', main, { alias })]);
  const p = (await personOf(alias))!;
  assert.equal(p.uuid, mainPerson.uuid);
  assert.deepEqual(p.properties, { m: 1, a: 1 });
  assert.deepEqual(p.distinct_ids, [alias, main].sort());
});

test('$groupidentify creates group types and upserts group properties', async () => {
  const rev = await maxRevision();
  await ingestEvents(db.sql, [
    ev('$groupidentify', 'g-user', { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme', size: 1 } }),
    ev('$groupidentify', 'g-user', { $group_type: 'company', $group_key: 'acme', $group_set: { size: 2 }, $group_set_once: { name: 'X', founded: 1999 } }),
    ev('pageview', 'g-user', { $groups: { team: 't1' } }),
  ]);
  const mappings = await db.sql<{ group_type: string; group_type_index: number }[]>`SELECT group_type, group_type_index
    FROM group_type_mappings WHERE project_id = ${projectId} ORDER BY group_type_index`;
  assert.deepEqual(mappings.map((m) => ({ ...m })), [{ group_type: 'company', group_type_index: 0 }, { group_type: 'team', group_type_index: 1 }]);
  const [g] = await db.sql<{ properties: Record<string, unknown> }[]>`SELECT properties FROM groups
    WHERE project_id = ${projectId} AND group_type_index = 0 AND group_key = 'acme'`;
  assert.deepEqual(g!.properties, { name: 'Acme', size: 2, founded: 1999 });
  const changes = (await changesSince(rev)).filter((c) => c.kind !== 'person');
  assert.deepEqual(changes.map((c) => [c.kind, c.entity_id, c.payload]), [
    ['group_type_mapping', `${projectId}:0`, { project_id: projectId, group_type: 'company', group_type_index: 0 }],
    ['group_type_mapping', `${projectId}:1`, { project_id: projectId, group_type: 'team', group_type_index: 1 }],
    ['group', `${projectId}:0:acme`, { project_id: projectId, group_type_index: 0, group_key: 'acme', properties: { name: 'Acme', size: 2, founded: 1999 } }],
  ]);
});

test('a sixth group type is ignored', async () => {
  const types = ['t_a', 't_b', 't_c', 't_d', 't_e'];
  await ingestEvents(db.sql, types.map((t) => ({ ...ev('$groupidentify', 'gx', { $group_type: t, $group_key: 'k', $group_set: { a: 1 } }), project_id: otherProjectId })));
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM group_type_mappings WHERE project_id = ${otherProjectId}`;
  assert.equal(n, 5);
  const [{ g }] = await db.sql<{ g: number }[]>`SELECT count(*)::int AS g FROM groups WHERE project_id = ${otherProjectId}`;
  assert.equal(g, 5);
});

test('$feature_flag_called sets last_called_at to the latest timestamp and never moves it backwards', async () => {
  const [flag] = await db.sql<{ id: number }[]>`INSERT INTO feature_flags (project_id, key) VALUES (${projectId}, 'usage-flag') RETURNING id`;
  const at = (iso: string) => ({ ...ev('$feature_flag_called', 'fu', { $feature_flag: 'usage-flag', $feature_flag_response: true }), timestamp: iso });
  const lastCalled = async () => (await db.sql<{ t: Date | null }[]>`SELECT last_called_at AS t FROM feature_flags WHERE id = ${flag!.id}`)[0]!.t?.toISOString() ?? null;
  await ingestEvents(db.sql, [at('2026-02-01T10:00:00.000Z'), at('2026-02-03T10:00:00.000Z'), at('2026-02-02T10:00:00.000Z')]);
  assert.equal(await lastCalled(), '2026-02-03T10:00:00.000Z');
  await ingestEvents(db.sql, [at('2026-01-15T00:00:00.000Z')]);
  assert.equal(await lastCalled(), '2026-02-03T10:00:00.000Z', 'older event does not move it back');
  await ingestEvents(db.sql, [at('2026-02-04T00:00:00.000Z')]);
  assert.equal(await lastCalled(), '2026-02-04T00:00:00.000Z');
  await ingestEvents(db.sql, [at('2999-01-01T00:00:00.000Z')]);
  assert.ok(Date.parse((await lastCalled())!) <= Date.now(), 'future timestamps are capped at now');
});

test('event definitions: created on first sight, last_seen_at is the max', async () => {
  const name = `def-${crypto.randomUUID()}`;
  const at = (iso: string) => ({ ...ev(name, 'd'), timestamp: iso });
  await ingestEvents(db.sql, [at('2026-03-02T00:00:00.000Z'), at('2026-03-01T00:00:00.000Z')]);
  await ingestEvents(db.sql, [at('2026-02-01T00:00:00.000Z')]);
  const [d] = await db.sql<{ created_at: Date; last_seen_at: Date }[]>`SELECT created_at, last_seen_at FROM event_definitions
    WHERE project_id = ${projectId} AND name = ${name}`;
  assert.ok(d!.created_at);
  assert.equal(d!.last_seen_at.toISOString(), '2026-03-02T00:00:00.000Z');
  const vols = await db.sql<{ day: Date; count: string }[]>`SELECT day, count FROM event_volume_daily
    WHERE project_id = ${projectId} AND event = ${name} ORDER BY day`;
  assert.deepEqual(vols.map((v) => Number(v.count)), [1, 1, 1]);
});

test('writeHashKeyOverrides inserts only where missing, for existing persons, with change-log entries', async () => {
  const anon = `hk-anon-${crypto.randomUUID()}`;
  const user = `hk-user-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('e', anon), ev('e', user)]);
  const rev = await maxRevision();
  assert.equal(await writeHashKeyOverrides(db.sql, projectId, [user, anon, 'nobody'], ['f1', 'f2'], anon), 4);
  assert.equal(await writeHashKeyOverrides(db.sql, projectId, [user, anon], ['f1', 'f2', 'f3'], 'other'), 2);
  const userPerson = (await personOf(user))!;
  const rows = await db.sql<{ feature_flag_key: string; hash_key: string }[]>`SELECT feature_flag_key, hash_key
    FROM feature_flag_hash_key_overrides WHERE person_id = ${userPerson.id} ORDER BY feature_flag_key`;
  assert.deepEqual(rows.map((r) => `${r.feature_flag_key}=${r.hash_key}`), [`f1=${anon}`, `f2=${anon}`, 'f3=other']);
  const changes = await changesSince(rev);
  assert.equal(changes.length, 6);
  assert.ok(changes.every((c) => c.kind === 'hash_key_override' && c.op === 'upsert'));
  assert.ok(changes.some((c) => c.entity_id === `${projectId}:${userPerson.uuid}:f3` && c.payload.hash_key === 'other'));
});

test('concurrent batches for the same new distinct id create one person', async () => {
  const id = `race-${crypto.randomUUID()}`;
  await Promise.all([1, 2, 3, 4].map((i) => ingestEvents(db.sql, [ev('e', id, { $set: { [`k${i}`]: i } })])));
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM person_distinct_ids WHERE distinct_id = ${id}`;
  assert.equal(n, 1);
  assert.deepEqual(Object.keys((await personOf(id))!.properties).sort(), ['k1', 'k2', 'k3', 'k4']);
});

test('the capture snapshot sources match the change-log shapes of the current state, page after page', async () => {
  const { CAPTURE_SNAPSHOT_SOURCES } = await import('../../../src/control-plane/ingestion/snapshot.js');
  const id = `snap-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('e', id, { $set: { s: 1 } })]);
  await writeHashKeyOverrides(db.sql, projectId, [id], ['snap-flag'], 'h');
  const seen: { kind: string; entityId: string; payload: any }[] = [];
  for (const source of CAPTURE_SNAPSHOT_SOURCES) {
    // Pages of 2 rows: every key is visited once, in increasing order.
    const keys: string[] = [];
    for (let after = null as readonly (number | string)[] | null; ;) {
      const rows = await source.page(db.sql, after, 2);
      if (rows.length === 0) break;
      for (const r of rows) { seen.push(r); keys.push(JSON.stringify(r.key)); }
      after = rows[rows.length - 1]!.key;
    }
    assert.equal(new Set(keys).size, keys.length, `${source.name}: no key twice`);
  }
  const person = (await personOf(id))!;
  const p = seen.find((e) => e.kind === 'person' && e.entityId === person.uuid)!;
  assert.deepEqual(p.payload, { id: person.uuid, project_id: projectId, distinct_ids: [id], properties: { s: 1 } });
  const o = seen.find((e) => e.kind === 'hash_key_override' && e.entityId === `${projectId}:${person.uuid}:snap-flag`)!;
  assert.deepEqual(o.payload, { project_id: projectId, person_id: person.uuid, feature_flag_key: 'snap-flag', hash_key: 'h' });
  assert.ok(seen.some((e) => e.kind === 'group' && e.entityId === `${projectId}:0:acme`));
});

test('a merge inside one batch, after both persons were created in it', async () => {
  const anon = `ib-anon-${crypto.randomUUID()}`;
  const user = `ib-user-${crypto.randomUUID()}`;
  const rev = await maxRevision();
  await ingestEvents(db.sql, [
    ev('pageview', anon, { $set: { a: 1, shared: 'anon' } }),
    ev('pageview', user, { $set: { u: 1, shared: 'user' } }),
    ev('$identify', user, { $anon_distinct_id: anon, $set: { after: true } }),
    ev('pageview', anon, { $set: { later: 1 } }),
  ]);
  const p = (await personOf(anon))!;
  assert.equal(p.uuid, (await personOf(user))!.uuid);
  assert.deepEqual(p.properties, { a: 1, u: 1, shared: 'user', after: true, later: 1 });
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM person_distinct_ids WHERE distinct_id IN (${anon}, ${user})`;
  assert.equal(n, 2);
  const changes = (await changesSince(rev)).filter((c) => c.kind === 'person');
  assert.deepEqual(changes.map((c) => c.op), ['delete', 'upsert']);
  assert.equal(changes[1]!.entity_id, p.uuid);
  assert.deepEqual(changes[1]!.payload.properties, p.properties);
});

test('$merge_dangerously merges even an identified person', async () => {
  const a = `md-a-${crypto.randomUUID()}`;
  const b = `md-b-${crypto.randomUUID()}`;
  await ingestEvents(db.sql, [ev('$identify', a, { $anon_distinct_id: `${a}-anon` }), ev('$identify', b, { $anon_distinct_id: `${b}-anon` })]);
  assert.equal((await personOf(a))!.is_identified, true);
  await ingestEvents(db.sql, [ev('$create_alias', b, { alias: a })]);
  assert.notEqual((await personOf(a))!.uuid, (await personOf(b))!.uuid, '$create_alias refuses');
  await ingestEvents(db.sql, [ev('$merge_dangerously', b, { alias: a })]);
  assert.equal((await personOf(a))!.uuid, (await personOf(b))!.uuid);
  assert.deepEqual((await personOf(a))!.distinct_ids, [a, `${a}-anon`, b, `${b}-anon`].sort());
});

test('values Postgres would reject are made storable instead of failing the batch', async () => {
  const lone = '\ud800';
  const huge = 'x'.repeat(20_000);
  const events = [
    ev(`nul\u0000name`, `nul\u0000id`, { [`k\u0000`]: `v\u0000`, s: `a${lone}b`, $set: { p: `q\u0000` } }),
    ev(huge, huge, { big: huge }),
    ev('$feature_flag_called', 'ff-huge', { $feature_flag: huge }),
    ev('$groupidentify', 'g-huge', { $group_type: 'company', $group_key: huge, $group_set: { a: 1 } }),
    ev('$groupidentify', 'g-huge', { $group_type: huge, $group_key: 'k', $group_set: { a: 1 } }),
    { ...ev('e', 'old'), timestamp: '-001000-01-01T00:00:00.000Z' },
  ];
  const r = await ingestEvents(db.sql, events);
  assert.deepEqual(r, { inserted: 5, duplicates: 0, invalid: 1 });
  const [row] = await db.sql<{ event: string; distinct_id: string; properties: any }[]>`SELECT event, distinct_id, properties FROM events WHERE uuid = ${events[0]!.uuid}`;
  assert.equal(row!.event, 'nul\ufffdname');
  assert.equal(row!.distinct_id, 'nul\ufffdid');
  assert.deepEqual(row!.properties, { 'k\ufffd': 'v\ufffd', s: 'a\ufffdb', $set: { p: 'q\ufffd' } });
  assert.deepEqual((await personOf('nul\ufffdid'))!.properties, { p: 'q\ufffd' });
  const [big] = await db.sql<{ event: string; distinct_id: string }[]>`SELECT event, distinct_id FROM events WHERE uuid = ${events[1]!.uuid}`;
  assert.equal(big!.event.length, 200);
  assert.equal(big!.distinct_id.length, 200);
});

function overrideRecord(distinctId: string, anon: string, flagKeys: string[], project = projectId) {
  clock += 1000;
  return hashKeyOverrideRecord({ uuid: crypto.randomUUID(), projectId: project, distinctId, anonDistinctId: anon, flagKeys,
    timestamp: new Date(clock).toISOString() });
}
async function overridesOf(distinctId: string) {
  const p = await personOf(distinctId);
  if (!p) return {};
  const rows = await db.sql<{ feature_flag_key: string; hash_key: string }[]>`SELECT feature_flag_key, hash_key
    FROM feature_flag_hash_key_overrides WHERE person_id = ${p.id}`;
  return Object.fromEntries(rows.map((r) => [r.feature_flag_key, r.hash_key]));
}

test('hash-key override records: applied after the batch\'s persons, never stored as events or definitions', async () => {
  const anon = 'hko-anon-1';
  const user = 'hko-user-1';
  const rev = await maxRevision();
  // Record first, $identify after it in the same batch: persons are processed before records.
  const r = await ingestEvents(db.sql, [
    ev('$pageview', anon),
    overrideRecord(user, anon, ['exp-a', 'exp-b']),
    ev('$identify', user, { $anon_distinct_id: anon }),
  ]);
  assert.deepEqual(r, { inserted: 2, duplicates: 0, invalid: 0, overrideRecords: 1, overridesWritten: 2 });
  assert.deepEqual(await overridesOf(user), { 'exp-a': anon, 'exp-b': anon });
  assert.equal((await overridesOf(anon))['exp-a'], anon, 'same person');
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE event = ${HASH_KEY_OVERRIDE_EVENT}`;
  assert.equal(n, 0);
  const defs = await db.sql`SELECT 1 FROM event_definitions WHERE name = ${HASH_KEY_OVERRIDE_EVENT}`;
  assert.equal(defs.length, 0);
  const changes = await changesSince(rev);
  assert.equal(changes.filter((c) => c.kind === 'hash_key_override' && c.op === 'upsert').length, 2);

  // Redelivery and a later record change nothing: where missing only, first writer wins.
  const again = await ingestEvents(db.sql, [overrideRecord(user, anon, ['exp-a']), overrideRecord(user, 'other', ['exp-a', 'exp-c'])]);
  assert.deepEqual(again, { inserted: 0, duplicates: 0, invalid: 0, overrideRecords: 2, overridesWritten: 1 });
  assert.deepEqual(await overridesOf(user), { 'exp-a': anon, 'exp-b': anon, 'exp-c': 'other' });
});

test('hash-key override records: unmarked, malformed or of unknown projects are invalid; no person, no row', async () => {
  const anon = 'hko-anon-2';
  const user = 'hko-user-2';
  await ingestEvents(db.sql, [ev('$pageview', anon)]);
  const unmarked = { ...overrideRecord(user, anon, ['exp-a']) } as Record<string, unknown>;
  delete unmarked.$internal;
  const badKeys = overrideRecord(user, anon, ['exp-a']);
  (badKeys.properties as Record<string, unknown>).flag_keys = 'exp-a';
  const tooMany = overrideRecord(user, anon, ['exp-a']);
  (tooMany.properties as Record<string, unknown>).distinct_ids = [user, anon, 'third'];
  const r = await ingestEvents(db.sql, [unmarked, badKeys, tooMany, overrideRecord(user, anon, ['exp-a'], 987654)]);
  assert.deepEqual(r, { inserted: 0, duplicates: 0, invalid: 4 });
  assert.deepEqual(await overridesOf(anon), {});
  // Neither person exists: nothing to write (PostHog writes for existing persons only).
  const none = await ingestEvents(db.sql, [overrideRecord('hko-nobody', 'hko-nobody-anon', ['exp-a'])]);
  assert.deepEqual(none, { inserted: 0, duplicates: 0, invalid: 0, overrideRecords: 1, overridesWritten: 0 });
  // Only the anonymous person exists: it gets the override.
  await ingestEvents(db.sql, [overrideRecord(user, anon, ['exp-a'])]);
  assert.deepEqual(await overridesOf(anon), { 'exp-a': anon });
});

test('a property update rewrites the person in place on its page (persons keep room for HOT updates, migration 0018)', async () => {
  // A database of its own: no dead rows from other tests that pruning could make room from.
  const own = await createTestDatabase();
  try {
    const ownProjectId = (await seedProject(own.sql, await seedOrganization(own.sql))).id;
    const at = (d: string, properties: Record<string, unknown>) => ({ ...ev('$pageview', d, properties), project_id: ownProjectId });
    // 300 new persons in one batch: every page but the last is filled as far as the table allows.
    const ids = Array.from({ length: 300 }, (_, i) => `hot-${i}`);
    await ingestEvents(own.sql, ids.map((d) => at(d, { $set: { email: `${d}@example.com`, plan: 'free' } })));
    const row = async (d: string) => {
      const [r] = await own.sql<{ page: string; properties: Record<string, unknown> }[]>`SELECT (p.ctid::text::point)[0]::int::text AS page, p.properties
        FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id WHERE d.distinct_id = ${d}`;
      return r!;
    };
    const before = (await row(ids[0]!)).page;
    assert.notEqual(before, (await row(ids[ids.length - 1]!)).page, 'the batch spans several pages, so the first one is filled');
    await ingestEvents(own.sql, [at(ids[0]!, { $set: { plan: 'pro' } })]);
    const after = await row(ids[0]!);
    assert.deepEqual(after.properties, { email: 'hot-0@example.com', plan: 'pro' });
    assert.equal(after.page, before, 'the new version stays on the same page (a HOT update: no index entry written)');
  } finally {
    await own.drop();
  }
});
