/** Change-log retention on a real database, and what a pruned log means for a watching node. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pruneChangeLog } from '../../../src/control-plane/change-log/retention.js';
import { appendChanges, currentRevision } from '../../../src/control-plane/change-log/store.js';
import { seedFlag, seedOrganization, seedProject } from '../../support/seed.js';
import { assertStoreMatchesTables, syncFixture, waitForHead } from '../../support/sync.js';

test('only revisions beyond both bounds are pruned; a node behind the pruned prefix rebuilds from a snapshot', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const p = await seedProject(sql, org);
    for (let i = 0; i < 6; i++) await seedFlag(sql, p.id, `f${i}`);
    await fx.startServer();
    let node = await fx.startNode();
    const behindAt = await waitForHead(fx.db, node.store);
    await node.close();
    for (let i = 0; i < 4; i++) await sql.begin((tx) => appendChanges(tx, [{ projectId: null, kind: 'organization', entityId: String(org), op: 'upsert', payload: { id: org, name: `o${i}`, monthly_flag_requests_limit: null, quota_limited: false } }]));
    await sql`UPDATE organizations SET name = 'o3' WHERE id = ${org}`;
    const head = await currentRevision(sql);

    assert.equal(await pruneChangeLog(sql, { keepRevisions: 2, keepMs: 60_000 }), 0, 'everything is recent');
    await sql`UPDATE change_log SET created_at = created_at - interval '1 hour'`;
    assert.equal(await pruneChangeLog(sql, { keepRevisions: 2, keepMs: 60_000 }), head - 2);
    const [bounds] = await sql<{ min: number; max: number }[]>`SELECT min(revision)::int AS min, max(revision)::int AS max FROM change_log`;
    assert.deepEqual(bounds, { min: head - 1, max: head });

    node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    assert.ok(behindAt < head - 2);
    assert.equal(node.sync.state().snapshotsApplied, 1, 'log_pruned → snapshot');
    await assertStoreMatchesTables(fx.db, node.store);
  } finally {
    await fx.close();
  }
});
