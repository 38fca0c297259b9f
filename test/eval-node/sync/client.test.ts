/**
 * Sync path end to end: real Postgres (change log + entity tables), real gRPC Watch server,
 * real evaluation node with an LMDB store. Conditions are awaited with bounded polls.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createPersonalApiKey } from '../../../src/control-plane/keys/store.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import { openNodeStore, type WritableNodeStore } from '../../../src/eval-node/store/lmdb.js';
import { nodeStorePath } from '../../../src/eval-node/node.js';
import { renameOrganization, seedCohort, seedFlag, seedGroupType, seedOrganization, seedProject, seedUser, updateFlag } from '../../support/seed.js';
import { assertStoreMatchesTables, syncFixture, waitForHead, type SyncFixture } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';

/** Two projects with flags (one soft-deleted), cohorts, group types and a personal API key. */
async function seedWorld(fx: SyncFixture): Promise<{ orgId: number; p1: { id: number; token: string }; p2: { id: number; token: string }; flagIds: number[] }> {
  const { sql } = fx.db;
  const orgId = await seedOrganization(sql);
  const p1 = await seedProject(sql, orgId, 'one');
  const p2 = await seedProject(sql, orgId, 'two');
  const flagIds = [
    await seedFlag(sql, p1.id, 'alpha'),
    await seedFlag(sql, p1.id, 'beta', { groups: [{ properties: [{ key: 'email', value: 'x', operator: 'icontains', type: 'person' }], rollout_percentage: 50 }] }),
    await seedFlag(sql, p2.id, 'gamma'),
  ];
  const gone = await seedFlag(sql, p1.id, 'gone');
  await updateFlag(sql, gone, { deleted: true });
  await seedCohort(sql, p1.id, 'x-users');
  await seedGroupType(sql, p1.id, 'company', 0);
  await seedGroupType(sql, p1.id, 'team', 1);
  const userId = await seedUser(sql, orgId);
  await createPersonalApiKey(sql, { userId, label: 'feed', scopes: ['feature_flag:read'], scopedTeams: [p1.id] });
  return { orgId, p1, p2, flagIds };
}

test('a new node receives a snapshot holding every entity at the head revision', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.store.definitions(w.p1.id).flags.some((f) => f.key === 'gone'), false, 'soft-deleted flag is not served');
    await waitFor('connected and lag 0', () => node.sync.state().connected && node.sync.state().lag === 0);
    assert.equal(node.sync.state().snapshotsApplied, 1);
  } finally {
    await fx.close();
  }
});

test('changes from many concurrent writers stream in order until the node matches the tables', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    const seenRevisions: number[] = [];
    node.store.onApplied((rev) => seenRevisions.push(rev));
    const { sql } = fx.db;
    await Promise.all(Array.from({ length: 8 }, async (_, writer) => {
      const pid = writer % 2 === 0 ? w.p1.id : w.p2.id;
      const id = await seedFlag(sql, pid, `w${writer}`);
      for (let i = 0; i < 15; i++) await updateFlag(sql, id, { name: `w${writer}-${i}`, active: i % 2 === 0 });
      if (writer === 3) await updateFlag(sql, id, { deleted: true });
    }));
    await updateFlag(sql, w.flagIds[0]!, { deleted: true });
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.deepEqual(seenRevisions, [...seenRevisions].sort((a, b) => a - b), 'revisions applied in increasing order');
    assert.equal(node.sync.state().snapshotsApplied, 1, 'tail only after the first snapshot');
  } finally {
    await fx.close();
  }
});

test('a restarted node resumes from its revision without a snapshot', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    await fx.startServer();
    let node = await fx.startNode();
    const before = await waitForHead(fx.db, node.store);
    await node.close();
    await seedFlag(fx.db.sql, w.p2.id, 'while-down');
    node = await fx.startNode();
    assert.equal(node.store.revision(), before, 'serves what LMDB holds at once');
    assert.ok(node.store.projectByToken(w.p1.token), 'project readable before sync');
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 0, 'resumed the tail');
  } finally {
    await fx.close();
  }
});

test('a node whose data dir was wiped rebuilds from a snapshot', async () => {
  const fx = await syncFixture();
  try {
    await seedWorld(fx);
    await fx.startServer();
    let node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    await node.close();
    fs.rmSync(nodeStorePath(fx.config), { recursive: true, force: true });
    node = await fx.startNode();
    assert.equal(node.store.hasCompleteSnapshot(), false);
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 1);
  } finally {
    await fx.close();
  }
});

test('with the control plane stopped the store stays readable; the node reconnects and catches up', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    await fx.stopServer();
    await waitFor('disconnected', () => !node.sync.state().connected);
    await seedFlag(fx.db.sql, w.p1.id, 'during-outage');
    assert.equal(node.store.projectByToken(w.p1.token)?.id, w.p1.id, 'still serving');
    assert.equal(node.store.definitions(w.p1.id).flags.some((f) => f.key === 'during-outage'), false);
    await fx.startServer();
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 1, 'caught up from the tail');
    assert.ok(node.sync.state().connected);
  } finally {
    await fx.close();
  }
});

test('a wrong cluster token is refused with UNAUTHENTICATED and nothing is applied', async () => {
  const fx = await syncFixture();
  try {
    await seedWorld(fx);
    await fx.startServer();
    const node = await fx.startNode({ clusterToken: 'not-the-token' });
    await waitFor('UNAUTHENTICATED', () => node.sync.state().lastError?.code === grpc.status.UNAUTHENTICATED);
    assert.equal(node.store.revision(), 0);
    assert.equal(node.store.hasCompleteSnapshot(), false);
    assert.equal(node.sync.state().connected, false);
  } finally {
    await fx.close();
  }
});

test('a snapshot interrupted midway leaves the previous complete state in place', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    // Threshold 3: a node more than 3 revisions behind gets a snapshot.
    await fx.startServer({ maxTailChanges: 3, tailPerSnapshotRow: 0 });
    let node = await fx.startNode();
    const before = await waitForHead(fx.db, node.store);
    const beforeFlags = node.store.definitions(w.p1.id).flags;
    await node.close();
    await fx.stopServer();

    for (let i = 0; i < 5; i++) await seedFlag(fx.db.sql, w.p1.id, `later-${i}`);
    await updateFlag(fx.db.sql, w.flagIds[0]!, { deleted: true });

    // The server stalls after sending SnapshotBegin and 4 entities (two batches), then is killed.
    let release: () => void = () => {};
    const stalled = new Promise<void>((r) => { release = r; });
    await fx.startServer({ maxTailChanges: 3, tailPerSnapshotRow: 0, chunkMaxEntities: 2, afterSnapshotEvent: (sent) => (sent === 4 ? stalled : Promise.resolve()) });
    node = await fx.startNode();
    await waitFor('4 entities staged', () => node.sync.state().snapshotting && node.sync.state().snapshotStaged >= 4);
    assert.equal(node.store.revision(), before, 'staged entities are invisible');
    await fx.stopServer();
    release();
    await waitFor('stream ended', () => !node.sync.state().snapshotting && !node.sync.state().connected);
    assert.equal(node.store.revision(), before);
    assert.equal(node.store.hasCompleteSnapshot(), true);
    assert.deepEqual(node.store.definitions(w.p1.id).flags, beforeFlags, 'previous complete state');
    await node.close();

    // The same state survives a reopen, and a full server then brings the node up to date.
    const reopened = openNodeStore(path.join(fx.dataDir, 'lmdb'), { readOnly: true });
    assert.equal(reopened.revision(), before);
    assert.deepEqual(reopened.definitions(w.p1.id).flags, beforeFlags);
    await reopened.close();
    await fx.startServer({ maxTailChanges: 3, tailPerSnapshotRow: 0 });
    node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 1);
    assert.ok(node.store.revision() > before && node.store.revision() === await currentRevision(fx.db.sql));
  } finally {
    await fx.close();
  }
});

test('a new node\'s bootstrap resumes after a dropped stream and a restart of both sides, from the last chunk it stored', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    for (let i = 0; i < 6; i++) await seedFlag(fx.db.sql, w.p1.id, `bulk-${i}`);
    // The server stalls after 4 entities (two chunks of 2), then the node and the server stop.
    let release: () => void = () => {};
    const stalled = new Promise<void>((r) => { release = r; });
    const sentFirst: number[] = [];
    await fx.startServer({ chunkMaxEntities: 2, afterSnapshotEvent: (sent) => { sentFirst.push(sent); return sent === 4 ? stalled : Promise.resolve(); } });
    let node = await fx.startNode();
    await waitFor('4 entities staged', () => node.sync.state().snapshotStaged >= 4);
    assert.equal(node.store.hasCompleteSnapshot(), false);
    assert.deepEqual((node.store as WritableNodeStore).pendingSnapshot()?.revision, await currentRevision(fx.db.sql));
    await node.close();
    await fx.stopServer();
    release();

    // Meanwhile the state moves on: a new flag, one deleted, one of the first chunks' entities changed.
    await seedFlag(fx.db.sql, w.p1.id, 'while-down');
    await updateFlag(fx.db.sql, w.flagIds[0]!, { deleted: true });
    await renameOrganization(fx.db.sql, w.orgId, 'renamed while down');

    const sentSecond: number[] = [];
    await fx.startServer({ chunkMaxEntities: 2, afterSnapshotEvent: async (sent) => { sentSecond.push(sent); } });
    node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsResumed, 1, 'resumed, not started over');
    assert.equal(node.sync.state().snapshotsApplied, 1);
    assert.equal((node.store as WritableNodeStore).pendingSnapshot(), null);
    assert.equal(sentFirst[sentFirst.length - 1], 4);
    assert.equal(sentSecond[sentSecond.length - 1], (await countLiveEntities(fx)) - 4, 'the 4 staged entities are not sent again');
    assert.equal(node.store.organization(w.orgId)?.name, 'renamed while down', 'a change to an entity of the staged part is replayed');
    await assertStoreMatchesTables(fx.db, node.store);
  } finally {
    await fx.close();
  }
});

/** Entities a full snapshot of the fixture's tables holds now. */
async function countLiveEntities(fx: SyncFixture): Promise<number> {
  const [r] = await fx.db.sql<{ n: number }[]>`SELECT (
    (SELECT count(*) FROM organizations) + (SELECT count(*) FROM projects) + (SELECT count(*) FROM group_type_mappings)
    + (SELECT count(*) FROM cohorts WHERE NOT deleted) + (SELECT count(*) FROM feature_flags WHERE NOT deleted)
    + (SELECT count(*) FROM personal_api_keys k JOIN users u ON u.id = k.user_id WHERE u.is_active))::int AS n`;
  return r!.n;
}

test('a stream silent for longer than the idle timeout is reopened from the store revision', async () => {
  const fx = await syncFixture();
  try {
    const w = await seedWorld(fx);
    await fx.startServer({ heartbeatIntervalMs: 3_600_000 });
    const node = await fx.startNode({}, { idleTimeoutMs: 150 });
    await waitForHead(fx.db, node.store);
    await waitFor('two reconnects', () => node.sync.state().streamsOpened >= 3);
    await seedFlag(fx.db.sql, w.p1.id, 'after-reconnects');
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.sync.state().snapshotsApplied, 1, 'reconnects resume the tail');
  } finally {
    await fx.close();
  }
});
