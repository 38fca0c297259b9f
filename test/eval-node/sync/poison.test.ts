/**
 * Changes a node cannot decode or apply (a payload nested past what
 * msgpack can carry, ids past LMDB's key size) must not freeze sync. Real Postgres change log,
 * real gRPC Watch server, real node with an LMDB store; the poison goes straight into the
 * change log and the tables, as data written before the edge bounded it would be.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendChanges, currentRevision } from '../../../src/control-plane/change-log/store.js';
import { MAX_PAYLOAD_DEPTH } from '../../../src/limits.js';
import { seedFlag, seedOrganization, seedProject } from '../../support/seed.js';
import { syncFixture, waitForHead } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';

/** `{a: {a: … {a: 1}}}`, `depth` levels. */
function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

test('a change too deep to carry and one LMDB cannot key are skipped and reported; later changes still arrive', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const p = await seedProject(sql, org);
    await seedFlag(sql, p.id, 'before');
    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    const streamsBefore = node.sync.state().streamsOpened;

    const longId = 'd'.repeat(2_300);
    const [deepRev] = await sql.begin((tx) => appendChanges(tx, [{
      projectId: p.id, kind: 'person', entityId: '00000000-0000-4000-8000-000000000001', op: 'upsert',
      payload: { id: '00000000-0000-4000-8000-000000000001', project_id: p.id, distinct_ids: ['deep'], properties: nested(1_250) },
    }])) as number[];
    // A flag whose id is too long for the by-project index (a dupSort value is bounded like a key).
    const [keyRev] = await sql.begin((tx) => appendChanges(tx, [{
      projectId: p.id, kind: 'feature_flag', entityId: 'f'.repeat(3_000), op: 'upsert',
      payload: { id: -1, key: 'forged', project_id: p.id, filters: { groups: [] }, active: true, deleted: false },
    }])) as number[];
    const [longRev] = await sql.begin((tx) => appendChanges(tx, [{
      projectId: p.id, kind: 'person', entityId: '00000000-0000-4000-8000-000000000002', op: 'upsert',
      payload: { id: '00000000-0000-4000-8000-000000000002', project_id: p.id, distinct_ids: [longId], properties: { plan: 'pro' } },
    }])) as number[];
    await seedFlag(sql, p.id, 'after');

    const head = await waitForHead(fx.db, node.store);
    assert.ok(node.store.definitions(p.id).flags.some((f) => f.key === 'after'), 'a later flag change reached the node');
    const st = node.sync.state();
    assert.equal(st.skippedChanges, 2, 'the deep person and the forged flag were skipped');
    assert.equal(st.lastSkippedRevision, keyRev);
    assert.ok(deepRev! < keyRev!);
    assert.equal(st.lag, 0);
    assert.equal(st.streamsOpened, streamsBefore, 'no reconnect loop');
    assert.equal(node.store.revision(), head);
    // A distinct id longer than LMDB's key size is stored under a digest and found again.
    assert.deepEqual(node.store.personByDistinctId(p.id, longId)?.properties, { plan: 'pro' });
    assert.equal(node.store.personByDistinctId(p.id, 'd'.repeat(2_299)), undefined);
    assert.equal(node.store.personByDistinctId(p.id, 'deep'), undefined);
    assert.ok(longRev! > keyRev!);
  } finally {
    await fx.close();
  }
});

test('a snapshot holding an entity too deep to carry still completes, without it', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const p = await seedProject(sql, org);
    await seedFlag(sql, p.id, 'kept');
    const [deep] = await sql<{ id: number }[]>`
      INSERT INTO persons (project_id, properties) VALUES (${p.id}, ${sql.json(nested(MAX_PAYLOAD_DEPTH + 50) as never)}) RETURNING id`;
    await sql`INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) VALUES (${p.id}, 'too-deep', ${deep!.id})`;
    const [ok] = await sql<{ id: number }[]>`INSERT INTO persons (project_id, properties) VALUES (${p.id}, ${sql.json({ plan: 'free' })}) RETURNING id`;
    await sql`INSERT INTO person_distinct_ids (project_id, distinct_id, person_id) VALUES (${p.id}, 'fine', ${ok!.id})`;
    await fx.startServer();
    const node = await fx.startNode();
    await waitFor('complete snapshot', () => node.store.hasCompleteSnapshot());
    assert.equal(node.store.revision(), await currentRevision(sql));
    assert.deepEqual(node.store.personByDistinctId(p.id, 'fine')?.properties, { plan: 'free' });
    assert.equal(node.store.personByDistinctId(p.id, 'too-deep'), undefined);
    assert.equal(node.sync.state().skippedChanges, 1);
    assert.ok(node.store.definitions(p.id).flags.some((f) => f.key === 'kept'));
  } finally {
    await fx.close();
  }
});
