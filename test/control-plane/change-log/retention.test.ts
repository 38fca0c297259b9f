/** Change-log retention on a real database, and what a pruned log means for a watching node. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compactChangeLog, pruneChangeLog } from '../../../src/control-plane/change-log/retention.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import { renameOrganization, seedFlag, seedOrganization, seedProject, updateFlag } from '../../support/seed.js';
import { assertStoreMatchesTables, syncFixture, waitForHead, type SyncFixture } from '../../support/sync.js';

/** Starts the server and a node, waits until the node holds the head, stops the node; resolves with that revision. */
async function nodeStoppedAtHead(fx: SyncFixture): Promise<number> {
  await fx.startServer();
  const node = await fx.startNode();
  const at = await waitForHead(fx.db, node.store);
  await node.close();
  return at;
}

test('only revisions beyond both bounds are pruned; a node behind the pruned prefix rebuilds from a snapshot', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const p = await seedProject(sql, org);
    for (let i = 0; i < 6; i++) await seedFlag(sql, p.id, `f${i}`);
    const behindAt = await nodeStoppedAtHead(fx);
    for (let i = 0; i < 4; i++) await renameOrganization(sql, org, `o${i}`);
    const head = await currentRevision(sql);

    assert.equal(await pruneChangeLog(sql, { keepRevisions: 2, keepMs: 60_000 }), 0, 'everything is recent');
    await sql`UPDATE change_log SET created_at = created_at - interval '1 hour'`;
    assert.equal(await pruneChangeLog(sql, { keepRevisions: 2, keepMs: 60_000 }), head - 2);
    const [bounds] = await sql<{ min: number; max: number }[]>`SELECT min(revision)::int AS min, max(revision)::int AS max FROM change_log`;
    assert.deepEqual(bounds, { min: head - 1, max: head });

    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    assert.ok(behindAt < head - 2);
    assert.equal(node.sync.state().snapshotsApplied, 1, 'log_pruned → snapshot');
    await assertStoreMatchesTables(fx.db, node.store);
  } finally {
    await fx.close();
  }
});

test('compaction keeps only the newest entry of each entity past the catch-up window; a node behind it still catches up from the tail', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const p = await seedProject(sql, org);
    const kept = await seedFlag(sql, p.id, 'kept');
    const behindAt = await nodeStoppedAtHead(fx);

    // While the node is away: the flag changes five times, another flag comes and goes, the org is renamed.
    for (let i = 0; i < 5; i++) await updateFlag(sql, kept, { name: `kept v${i}` });
    const gone = await seedFlag(sql, p.id, 'gone');
    await updateFlag(sql, gone, { deleted: true });
    for (let i = 0; i < 3; i++) await renameOrganization(sql, org, `o${i}`);
    const head = await currentRevision(sql);
    const before = await sql<{ kind: string; entity_id: string; revision: number }[]>`SELECT kind, entity_id, revision FROM change_log ORDER BY revision`;

    // Window of 1 revision: past it, the newest entry per entity only.
    const compacted = await compactChangeLog(sql, { windowRevisions: 1 });
    const after = await sql<{ kind: string; entity_id: string; revision: number }[]>`SELECT kind, entity_id, revision FROM change_log ORDER BY revision`;
    const newest = new Map<string, number>();
    for (const r of before) newest.set(`${r.kind}:${r.entity_id}`, r.revision);
    assert.deepEqual(after.map((r) => r.revision), [...newest.values()].sort((a, b) => a - b), 'exactly the newest entry of each entity');
    assert.equal(compacted, before.length - after.length);
    assert.ok(compacted >= 7);
    assert.equal(await compactChangeLog(sql, { windowRevisions: 1 }), 0, 'idempotent');

    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    assert.ok(behindAt < head);
    assert.equal(node.sync.state().snapshotsApplied, 0, 'compaction is not pruning: the tail is enough');
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.store.organization(org)?.name, 'o2');
    assert.deepEqual(node.store.definitions(p.id).flags.map((f) => f.name), ['kept v4']);
  } finally {
    await fx.close();
  }
});

test('the catch-up window is bounded by payload bytes as well as revisions', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const big = 'x'.repeat(4000);
    for (let i = 0; i < 6; i++) await renameOrganization(sql, org, `${i}${big}`);
    const head = await currentRevision(sql);
    const sizes = await sql<{ revision: number; size: number }[]>`SELECT revision, pg_column_size(payload) AS size FROM change_log
      WHERE kind = 'organization' ORDER BY revision DESC`;
    // A window of 1 M revisions, but only ~2.5 entries' worth of bytes: the newest 2 fit in it.
    const windowBytes = sizes[0]!.size + sizes[1]!.size + Math.floor(sizes[2]!.size / 2);
    await compactChangeLog(sql, { windowRevisions: 1_000_000, windowBytes });
    const orgRevisions = (await sql<{ revision: number }[]>`SELECT revision FROM change_log WHERE kind = 'organization' ORDER BY revision`).map((r) => r.revision);
    assert.deepEqual(orgRevisions, [head - 1, head]);
  } finally {
    await fx.close();
  }
});
