/**
 * The Watch protocol as a node sees it, through a raw gRPC client (real server, real
 * Postgres): authentication, snapshot framing, tail resumption, snapshot decisions, live
 * wake-ups, the declared-but-unimplemented RPCs, and shutdown.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { switchyardService } from '../../../src/grpc/loader.js';
import { clusterTokenMetadata } from '../../../src/control-plane/grpc/auth.js';
import { snapshotReason, type SnapshotReason } from '../../../src/control-plane/grpc/watch.js';
import { decodePayload, encodePayload } from '../../../src/grpc/payload.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import type { ChangeMessage, WatchEvent } from '../../../src/grpc/messages.js';
import { seedCohort, seedFlag, seedGroupType, seedOrganization, seedProject, updateFlag } from '../../support/seed.js';
import { syncFixture, type SyncFixture } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';

const reasons: { name: string; from: number; head: number; oldest: number | null; max: number; expected: SnapshotReason }[] = [
  { name: 'new node', from: 0, head: 50, oldest: 1, max: 10, expected: 'new_node' },
  { name: 'new node on an empty log', from: 0, head: 0, oldest: null, max: 10, expected: 'new_node' },
  { name: 'up to date', from: 50, head: 50, oldest: 1, max: 10, expected: null },
  { name: 'slightly behind', from: 45, head: 50, oldest: 1, max: 10, expected: null },
  { name: 'exactly at the threshold', from: 40, head: 50, oldest: 1, max: 10, expected: null },
  { name: 'past the threshold', from: 39, head: 50, oldest: 1, max: 10, expected: 'too_far_behind' },
  { name: 'ahead of the log (another database)', from: 60, head: 50, oldest: 1, max: 10, expected: 'ahead_of_log' },
  { name: 'ahead of an empty log', from: 5, head: 0, oldest: null, max: 10, expected: 'ahead_of_log' },
  { name: 'pruned past the node', from: 45, head: 50, oldest: 47, max: 10, expected: 'log_pruned' },
  { name: 'pruned up to the node exactly', from: 45, head: 50, oldest: 46, max: 10, expected: null },
];
for (const c of reasons) {
  test(`snapshotReason: ${c.name}`, () => {
    assert.equal(snapshotReason(c.from, c.head, c.oldest, c.max), c.expected);
  });
}

interface RawWatch { events: WatchEvent[]; status: Promise<grpc.StatusObject>; cancel(): void }

function rawClient(fx: SyncFixture): grpc.Client & Record<string, any> {
  const Service = switchyardService();
  return new Service(fx.config.controlPlane, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
}

function watch(fx: SyncFixture, from: number | string, token: string | null = fx.config.clusterToken): RawWatch {
  const client = rawClient(fx);
  const md = token === null ? new grpc.Metadata() : clusterTokenMetadata(token);
  const call: grpc.ClientReadableStream<WatchEvent> = client.Watch({ from_revision: String(from), node_id: 'raw' }, md);
  const events: WatchEvent[] = [];
  call.on('data', (e: WatchEvent) => events.push(e));
  call.on('error', () => {});
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', (s) => { client.close(); resolve(s); }));
  return { events, status, cancel: () => call.cancel() };
}

async function seed(fx: SyncFixture): Promise<{ p1: number }> {
  const { sql } = fx.db;
  const org = await seedOrganization(sql);
  const p1 = (await seedProject(sql, org)).id;
  await seedFlag(sql, p1, 'a');
  const b = await seedFlag(sql, p1, 'b');
  await updateFlag(sql, b, { active: false });
  const c = await seedFlag(sql, p1, 'c');
  await updateFlag(sql, c, { deleted: true });
  await seedCohort(sql, p1, 'k');
  await seedGroupType(sql, p1, 'company', 0);
  return { p1 };
}

/** Every Change in `events`, whether sent alone or in a ChangeBatch. */
function changesOf(events: WatchEvent[]): ChangeMessage[] {
  return events.flatMap((e) => (e.event === 'change' ? [e.change] : e.event === 'changes' ? e.changes.changes : []));
}

const heartbeatAt = (events: WatchEvent[], rev: number): boolean =>
  events.some((e) => e.event === 'heartbeat' && Number(e.heartbeat.revision) === rev);

test('Watch refuses a missing or wrong cluster token with UNAUTHENTICATED', async () => {
  const fx = await syncFixture();
  try {
    await fx.startServer();
    for (const token of [null, 'wrong']) {
      const w = watch(fx, 0, token);
      const s = await w.status;
      assert.equal(s.code, grpc.status.UNAUTHENTICATED, `token ${token}`);
      assert.equal(w.events.length, 0);
    }
  } finally {
    await fx.close();
  }
});

test('Watch rejects a negative from_revision with INVALID_ARGUMENT', async () => {
  const fx = await syncFixture();
  try {
    await fx.startServer();
    const s = await watch(fx, '-1').status;
    assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
  } finally {
    await fx.close();
  }
});

test('from_revision 0: SnapshotBegin, every live entity at the head revision, SnapshotEnd, then a Heartbeat', async () => {
  const fx = await syncFixture();
  try {
    await seed(fx);
    const head = await currentRevision(fx.db.sql);
    await fx.startServer();
    const w = watch(fx, 0);
    await waitFor('heartbeat', () => heartbeatAt(w.events, head));
    w.cancel();
    const kinds = w.events.map((e) => e.event);
    assert.equal(kinds[0], 'snapshot_begin');
    const endAt = kinds.indexOf('snapshot_end');
    assert.ok(endAt > 0);
    const begin = w.events[0] as Extract<WatchEvent, { event: 'snapshot_begin' }>;
    assert.equal(Number(begin.snapshot_begin.revision), head);
    const changes = changesOf(w.events.slice(1, endAt));
    assert.deepEqual(changes.map((c) => c.kind).sort(), ['cohort', 'feature_flag', 'feature_flag', 'group_type_mapping', 'organization', 'project'].sort(),
      'soft-deleted flag left out');
    for (const c of changes) {
      assert.equal(Number(c.revision), head);
      assert.equal(c.op, 'UPSERT');
    }
    const b = changes.find((c) => c.kind === 'feature_flag' && (decodePayload(c.payload) as { key: string }).key === 'b')!;
    assert.equal((decodePayload(b.payload) as { active: boolean; version: number }).active, false);
    assert.equal(changes.find((c) => c.kind === 'organization')!.project_id, '0', 'cluster-wide entities carry project 0');
  } finally {
    await fx.close();
  }
});

test('a node within the threshold gets exactly the changes after its revision, in order, then live ones', async () => {
  const fx = await syncFixture();
  try {
    const { p1 } = await seed(fx);
    const head = await currentRevision(fx.db.sql);
    const from = head - 3;
    await fx.startServer();
    const w = watch(fx, from);
    await waitFor('caught up', () => heartbeatAt(w.events, head));
    const revs = changesOf(w.events).map((c) => Number(c.revision));
    assert.deepEqual(revs, [from + 1, from + 2, from + 3]);
    assert.equal(w.events.some((e) => e.event === 'snapshot_begin'), false);

    await seedFlag(fx.db.sql, p1, 'live');
    await waitFor('live change', () => changesOf(w.events).some((c) => Number(c.revision) === head + 1));
    w.cancel();
  } finally {
    await fx.close();
  }
});

test('a node ahead of the log, too far behind, or behind a pruned prefix gets a snapshot', async () => {
  const fx = await syncFixture();
  try {
    await seed(fx);
    const head = await currentRevision(fx.db.sql);
    await fx.startServer({ maxTailChanges: 2, tailPerSnapshotRow: 0 });
    const starts = async (from: number): Promise<string> => {
      const w = watch(fx, from);
      await waitFor(`first event from ${from}`, () => w.events.length > 0);
      w.cancel();
      return w.events[0]!.event;
    };
    assert.equal(await starts(head + 10), 'snapshot_begin', 'ahead');
    assert.equal(await starts(head - 3), 'snapshot_begin', 'too far behind');
    assert.match(await starts(head - 1), /^changes?$/, 'within threshold');
    await fx.db.sql`DELETE FROM change_log WHERE revision <= ${head - 1}`;
    assert.equal(await starts(head - 2), 'snapshot_begin', 'pruned');
    assert.match(await starts(head - 1), /^changes?$/, 'pruned exactly up to the node: tail');
  } finally {
    await fx.close();
  }
});

test('past the fixed threshold a node still replays the tail while it is shorter than the snapshot', async () => {
  const fx = await syncFixture();
  try {
    const { p1 } = await seed(fx);
    for (let i = 0; i < 40; i++) await seedFlag(fx.db.sql, p1, `bulk-${i}`);
    await fx.db.sql`ANALYZE`;
    const head = await currentRevision(fx.db.sql);
    await fx.startServer({ maxTailChanges: 2 });
    const w = watch(fx, head - 10);
    await waitFor('first event', () => w.events.length > 0);
    w.cancel();
    assert.match(w.events[0]!.event, /^changes?$/, '10 behind, ~45 rows to snapshot: tail');
  } finally {
    await fx.close();
  }
});

test('snapshot entities and tail pages travel in ChangeBatch messages of bounded size', async () => {
  const fx = await syncFixture();
  try {
    await seed(fx);
    await fx.startServer({ batchMaxChanges: 2 });
    const w = watch(fx, 0);
    const head = await currentRevision(fx.db.sql);
    await waitFor('caught up', () => heartbeatAt(w.events, head));
    const batches = w.events.filter((e) => e.event === 'changes').map((e) => (e as Extract<WatchEvent, { event: 'changes' }>).changes.changes.length);
    assert.deepEqual(batches, [2, 2, 2], '6 live entities in batches of 2');
    const w2 = watch(fx, head - 5);
    await waitFor('tail caught up', () => heartbeatAt(w2.events, head));
    assert.deepEqual(w2.events.filter((e) => e.event !== 'heartbeat').map((e) => (e.event === 'changes' ? e.changes.changes.length : 1)), [2, 2, 1]);
    assert.deepEqual(changesOf(w2.events).map((c) => Number(c.revision)), [head - 4, head - 3, head - 2, head - 1, head]);
    w.cancel();
    w2.cancel();
  } finally {
    await fx.close();
  }
});

test('snapshots beyond the concurrency limit wait their turn, with heartbeats meanwhile', async () => {
  const fx = await syncFixture();
  try {
    await seed(fx);
    let release: () => void = () => {};
    const held = new Promise<void>((r) => { release = r; });
    let first = true;
    await fx.startServer({
      maxConcurrentSnapshots: 1, heartbeatIntervalMs: 50,
      afterSnapshotEvent: async (sent) => { if (sent === 0 && first) { first = false; await held; } },
    });
    const a = watch(fx, 0);
    await waitFor('first snapshot begun', () => a.events.some((e) => e.event === 'snapshot_begin'));
    const b = watch(fx, 0);
    await waitFor('heartbeats while queued', () => b.events.filter((e) => e.event === 'heartbeat').length >= 2);
    assert.equal(b.events.some((e) => e.event === 'snapshot_begin'), false, 'second snapshot waits');
    release();
    await waitFor('both snapshots complete', () => [a, b].every((w) => w.events.some((e) => e.event === 'snapshot_end')));
    a.cancel();
    b.cancel();
  } finally {
    await fx.close();
  }
});

test('Ingest checks the token; with it, a batch is acknowledged once committed and its person reaches Watch', async () => {
  const fx = await syncFixture();
  try {
    const org = await seedOrganization(fx.db.sql);
    const { id: projectId } = await seedProject(fx.db.sql, org);
    await fx.startServer();
    const client = rawClient(fx);
    const wrong = client.Ingest(clusterTokenMetadata('wrong')) as grpc.ClientDuplexStream<unknown, unknown>;
    wrong.on('data', () => {});
    wrong.on('error', () => {});
    const denied = await new Promise<grpc.StatusObject>((resolve) => wrong.on('status', resolve));
    assert.equal(denied.code, grpc.status.UNAUTHENTICATED);

    const events = [{ uuid: '01900000-0000-7000-8000-000000000001', project_id: projectId, event: 'signed up', distinct_id: 'grpc-user',
      properties: { $set: { plan: 'pro' } }, timestamp: new Date().toISOString() }];
    const call = client.Ingest(clusterTokenMetadata(fx.config.clusterToken!)) as grpc.ClientDuplexStream<unknown, { batch_id: string }>;
    const acks: string[] = [];
    call.on('data', (a) => acks.push(a.batch_id));
    call.on('error', () => {});
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.write({ batch_id: 'b1', events: encodePayload(events) });
    call.end();
    assert.equal((await status).code, grpc.status.OK);
    assert.deepEqual(acks, ['b1']);
    const [person] = await fx.db.sql<{ uuid: string }[]>`SELECT p.uuid FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id
      WHERE d.distinct_id = 'grpc-user'`;
    assert.ok(person, 'committed before the ack');
    const w = watch(fx, 0);
    await waitFor('person in the snapshot', () => changesOf(w.events).some((c) => c.kind === 'person'));
    w.cancel();
    const change = changesOf(w.events).find((c) => c.kind === 'person')!;
    assert.equal(change.entity_id, person!.uuid);
    assert.deepEqual(decodePayload(change.payload), { id: person!.uuid, project_id: projectId, distinct_ids: ['grpc-user'], properties: { plan: 'pro' } });
    client.close();
  } finally {
    await fx.close();
  }
});

test('closing the server ends open streams with UNAVAILABLE', async () => {
  const fx = await syncFixture();
  try {
    await seed(fx);
    await fx.startServer();
    const w = watch(fx, 0);
    await waitFor('snapshot end', () => w.events.some((e) => e.event === 'snapshot_end'));
    await fx.stopServer();
    assert.equal((await w.status).code, grpc.status.UNAVAILABLE);
  } finally {
    await fx.close();
  }
});
