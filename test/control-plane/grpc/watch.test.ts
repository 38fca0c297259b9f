/**
 * The Watch protocol as a node sees it, through a raw gRPC client (real server, real
 * Postgres): authentication, snapshot framing, tail resumption, snapshot decisions, live
 * wake-ups, the declared-but-unimplemented RPCs, and shutdown.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { switchyardService } from '../../../src/contract/loader.js';
import { clusterTokenMetadata } from '../../../src/control-plane/grpc/auth.js';
import { canResume, snapshotReason, type SnapshotReason } from '../../../src/control-plane/grpc/watch.js';
import { decodeCursor, encodeCursor, SNAPSHOT_SOURCES } from '../../../src/control-plane/grpc/snapshot.js';
import { Packr } from 'msgpackr';
import { decodePayload, encodePayload } from '../../../src/contract/payload.js';
import { currentRevision } from '../../../src/control-plane/change-log/store.js';
import type { ChangeMessage, WatchEvent } from '../../../src/contract/messages.js';
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

function watch(fx: SyncFixture, from: number | string, token: string | null = fx.config.clusterToken,
  resume: { revision: number; cursor: Buffer } | null = null): RawWatch {
  const client = rawClient(fx);
  const md = token === null ? new grpc.Metadata() : clusterTokenMetadata(token);
  const call: grpc.ClientReadableStream<WatchEvent> = client.Watch({ from_revision: String(from), node_id: 'raw',
    resume: resume && { revision: String(resume.revision), cursor: resume.cursor } }, md);
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

const chunkUnpackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** The entities of every SnapshotChunk in `events`, decoded (payload as msgpack bytes, like a Change). */
function snapshotEntities(events: WatchEvent[]): { kind: string; entity_id: string; project_id: number; payload: Buffer }[] {
  return events.flatMap((e) => (e.event === 'snapshot_chunk'
    ? (chunkUnpackr.unpack(e.snapshot_chunk.entities) as [string, string, number, Buffer][]).map(([kind, entity_id, project_id, payload]) => ({ kind, entity_id, project_id, payload }))
    : []));
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
    assert.equal(Number((w.events[endAt] as Extract<WatchEvent, { event: 'snapshot_end' }>).snapshot_end.revision), head, 'nothing to replay');
    assert.deepEqual(changesOf(w.events.slice(1, endAt)), [], 'no change after the snapshot began');
    const entities = snapshotEntities(w.events.slice(1, endAt));
    assert.deepEqual(entities.map((c) => c.kind).sort(), ['cohort', 'feature_flag', 'feature_flag', 'group_type_mapping', 'organization', 'project'].sort(),
      'soft-deleted flag left out');
    const b = entities.find((c) => c.kind === 'feature_flag' && (decodePayload(c.payload) as { key: string }).key === 'b')!;
    assert.equal((decodePayload(b.payload) as { active: boolean; version: number }).active, false);
    assert.equal(entities.find((c) => c.kind === 'organization')!.project_id, 0, 'cluster-wide entities carry project 0');
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
    await fx.db.sql`UPDATE change_log_horizon SET pruned_through = ${head - 1}`;
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

test('snapshot entities travel in SnapshotChunks, tail pages in ChangeBatch messages, both of bounded size', async () => {
  const fx = await syncFixture();
  try {
    await seed(fx);
    await fx.startServer({ batchMaxChanges: 2, chunkMaxEntities: 2 });
    const w = watch(fx, 0);
    const head = await currentRevision(fx.db.sql);
    await waitFor('caught up', () => heartbeatAt(w.events, head));
    const chunks = w.events.filter((e) => e.event === 'snapshot_chunk').map((e) => snapshotEntities([e]).length);
    assert.deepEqual(chunks, [2, 2, 2], '6 live entities in chunks of 2');
    assert.equal(w.events.some((e) => e.event === 'changes'), false);
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
    await waitFor('person in the snapshot', () => snapshotEntities(w.events).some((c) => c.kind === 'person'));
    w.cancel();
    const change = snapshotEntities(w.events).find((c) => c.kind === 'person')!;
    assert.equal(change.entity_id, person!.uuid);
    assert.deepEqual(decodePayload(change.payload), { id: person!.uuid, project_id: projectId, distinct_ids: ['grpc-user'], properties: { plan: 'pro' } });
    client.close();
  } finally {
    await fx.close();
  }
});

test('cursors: what the server wrote it reads back; anything else starts the snapshot over', () => {
  for (const c of [{ source: 0, after: null }, { source: 6, after: [42] }, { source: 7, after: [3, 1, 'acme'] }, { source: SNAPSHOT_SOURCES.length, after: null }]) {
    assert.deepEqual(decodeCursor(encodeCursor(c)), c);
  }
  for (const bad of [Buffer.alloc(0), Buffer.from([0xc1]), encodePayload({ source: 1 }), encodePayload([SNAPSHOT_SOURCES.length + 1, null]),
    encodePayload([0, [{}]]), encodePayload([0, []]), encodePayload([-1, null]), Buffer.alloc(5000)]) {
    assert.equal(decodeCursor(bad), null, bad.toString('hex').slice(0, 40));
  }
  assert.equal(canResume(10, 20, 1), true);
  assert.equal(canResume(10, 20, 11), true, 'every revision after 10 is still there');
  assert.equal(canResume(10, 20, 12), false, 'revision 11 was pruned');
  assert.equal(canResume(21, 20, 1), false, 'begun above the head: another database');
});

test('a paged snapshot replays the changes made while its pages were read, and resumes from a chunk cursor', async () => {
  const fx = await syncFixture();
  try {
    const { p1 } = await seed(fx);
    const early = await seedFlag(fx.db.sql, p1, 'early');
    let release: () => void = () => {};
    const held = new Promise<void>((r) => { release = r; });
    let hold = true;
    // Pause after the first chunk (organization + project), then change the state underneath.
    await fx.startServer({ chunkMaxEntities: 2, afterSnapshotEvent: async (sent) => { if (sent === 2 && hold) await held; } });
    const r0 = await currentRevision(fx.db.sql);
    const w = watch(fx, 0);
    await waitFor('first chunk', () => w.events.some((e) => e.event === 'snapshot_chunk'));
    const firstCursor = (w.events.find((e) => e.event === 'snapshot_chunk') as Extract<WatchEvent, { event: 'snapshot_chunk' }>).snapshot_chunk.cursor;
    const late = await seedFlag(fx.db.sql, p1, 'late');
    await updateFlag(fx.db.sql, early, { active: false });
    await updateFlag(fx.db.sql, early, { deleted: true });
    const head = await currentRevision(fx.db.sql);
    hold = false;
    release();
    await waitFor('snapshot end', () => w.events.some((e) => e.event === 'snapshot_end'));
    w.cancel();
    const begin = w.events[0] as Extract<WatchEvent, { event: 'snapshot_begin' }>;
    assert.equal(Number(begin.snapshot_begin.revision), r0);
    assert.equal(begin.snapshot_begin.resumed, false);
    const end = w.events.find((e) => e.event === 'snapshot_end') as Extract<WatchEvent, { event: 'snapshot_end' }>;
    assert.equal(Number(end.snapshot_end.revision), head, 'ends at the head after the replay');
    assert.deepEqual(changesOf(w.events).map((c) => Number(c.revision)), Array.from({ length: head - r0 }, (_, i) => r0 + 1 + i), 'every change after R0, in order');
    // Folding pages then replayed changes gives the live flags: 'late' in, 'early' out.
    const flags = new Map<string, string>();
    for (const e of snapshotEntities(w.events)) if (e.kind === 'feature_flag') flags.set(e.entity_id, (decodePayload(e.payload) as { key: string }).key);
    for (const c of changesOf(w.events)) {
      if (c.kind !== 'feature_flag') continue;
      const f = decodePayload(c.payload) as { key: string; deleted: boolean };
      if (c.op === 'DELETE' || f.deleted) flags.delete(c.entity_id); else flags.set(c.entity_id, f.key);
    }
    assert.deepEqual([...flags.values()].sort(), ['a', 'b', 'late']);
    assert.ok(flags.has(String(late)));

    // Resuming after the first chunk: the rest only, marked resumed, ending at the head again.
    const r = watch(fx, 0, fx.config.clusterToken, { revision: r0, cursor: firstCursor });
    await waitFor('resumed snapshot end', () => r.events.some((e) => e.event === 'snapshot_end'));
    r.cancel();
    assert.equal((r.events[0] as Extract<WatchEvent, { event: 'snapshot_begin' }>).snapshot_begin.resumed, true);
    const resumedKinds = snapshotEntities(r.events).map((e) => e.kind);
    assert.equal(resumedKinds.includes('organization'), false, 'the first chunk is not sent again');
    assert.ok(resumedKinds.includes('feature_flag'));
    assert.equal(Number((r.events.find((e) => e.event === 'snapshot_end') as Extract<WatchEvent, { event: 'snapshot_end' }>).snapshot_end.revision), head);

    // A cursor from a begin revision above the head (another database) starts over.
    const o = watch(fx, 0, fx.config.clusterToken, { revision: head + 100, cursor: firstCursor });
    await waitFor('fresh snapshot', () => o.events.some((e) => e.event === 'snapshot_end'));
    o.cancel();
    assert.equal((o.events[0] as Extract<WatchEvent, { event: 'snapshot_begin' }>).snapshot_begin.resumed, false);
    assert.equal(Number((o.events[0] as Extract<WatchEvent, { event: 'snapshot_begin' }>).snapshot_begin.revision), head);
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
