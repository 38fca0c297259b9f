/**
 * The Ingest handler over a real gRPC server (HTTP/2, protobuf) on real Postgres. The contract
 * used here is the Ingest subset of proto/switchyard.proto (same package, service and fields).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { pack } from 'msgpackr';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { createLogger } from '../../../src/log.js';
import { createIngestHandler, type IngestHandlerDeps } from '../../../src/control-plane/grpc/ingest.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

const PROTO = `syntax = "proto3";
package switchyard.v1;
service Switchyard { rpc Ingest(stream IngestBatch) returns (stream IngestAck); }
message IngestBatch { string batch_id = 1; bytes events = 2; }
message IngestAck { string batch_id = 1; }`;
const TOKEN = 'ingest-test-token';

let db: TestDatabase;
let projectId: number;
let Client: grpc.ServiceClientConstructor;

before(async () => {
  db = await createTestDatabase();
  const [org] = await db.sql<{ id: number }[]>`INSERT INTO organizations (name) VALUES ('o') RETURNING id`;
  const [p] = await db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token) VALUES (${org!.id}, 'p', 'phc_grpc_ingest') RETURNING id`;
  projectId = p!.id;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sy-proto-')), 'ingest.proto');
  fs.writeFileSync(file, PROTO);
  const def = protoLoader.loadSync(file, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  Client = (grpc.loadPackageDefinition(def) as any).switchyard.v1.Switchyard;
});
after(async () => { await db.drop(); });

async function serve(overrides: Partial<IngestHandlerDeps> = {}) {
  const server = new grpc.Server();
  const handler = createIngestHandler({
    sql: db.sql, log: createLogger('silent'),
    authorize: (md) => md.get('authorization')[0] === `Bearer ${TOKEN}`, ...overrides,
  });
  server.addService(Client.service, { Ingest: handler as grpc.UntypedHandleCall });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => e ? reject(e) : resolve(p)));
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  return { client, close: () => { client.close(); server.forceShutdown(); } };
}

function md(token = TOKEN): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('authorization', `Bearer ${token}`);
  return m;
}

function event(distinctId: string) {
  return { uuid: crypto.randomUUID(), project_id: projectId, event: 'grpc-test', distinct_id: distinctId,
    properties: { $set: { via: 'grpc' } }, timestamp: new Date().toISOString() };
}

/** Sends batches on one call; resolves with acks and the final status. */
function run(client: any, metadata: grpc.Metadata, batches: { batch_id: string; events: Buffer }[],
  onAck?: (id: string) => Promise<void>): Promise<{ acks: string[]; status: grpc.StatusObject | grpc.ServiceError }> {
  return new Promise((resolve) => {
    const call = client.Ingest(metadata);
    const acks: string[] = [];
    const checks: Promise<void>[] = [];
    call.on('data', (a: { batch_id: string }) => { acks.push(a.batch_id); if (onAck) checks.push(onAck(a.batch_id)); });
    let done = false;
    const finish = (status: any) => { if (done) return; done = true; void Promise.all(checks).then(() => resolve({ acks, status })); };
    call.on('error', finish);
    call.on('status', finish);
    for (const b of batches) call.write(b);
    call.end();
  });
}

test('each batch is acknowledged in order, and only once its events are committed', async () => {
  const { client, close } = await serve();
  const batches = [1, 2, 3].map((i) => {
    const events = [event(`g${i}a`), event(`g${i}b`)];
    return { id: `b${i}`, uuids: events.map((e) => e.uuid), msg: { batch_id: `b${i}`, events: pack(events) } };
  });
  const { acks, status } = await run(client, md(), batches.map((b) => b.msg), async (id) => {
    const b = batches.find((x) => x.id === id)!;
    // Another connection sees the rows at the moment the ack arrives: the commit happened first.
    const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE uuid = ANY(${b.uuids}::uuid[])`;
    assert.equal(n, 2, `batch ${id} committed before its ack`);
  });
  assert.deepEqual(acks, ['b1', 'b2', 'b3']);
  assert.equal(status.code, grpc.status.OK);
  close();
});

test('a redelivered batch is acknowledged again without duplicating rows', async () => {
  const { client, close } = await serve();
  const events = [event('redeliver')];
  const msg = { batch_id: 'r1', events: pack(events) };
  assert.deepEqual((await run(client, md(), [msg])).acks, ['r1']);
  assert.deepEqual((await run(client, md(), [msg])).acks, ['r1']);
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE uuid = ${events[0]!.uuid}`;
  assert.equal(n, 1);
  close();
});

test('a failed ingestion is not acknowledged and ends the call UNAVAILABLE', async () => {
  let calls = 0;
  const { client, close } = await serve({
    ingest: async (sql, evs) => { calls++; if (calls === 2) throw new Error('db down'); return ingestEvents(sql, evs); },
  });
  const { acks, status } = await run(client, md(), ['f1', 'f2', 'f3'].map((id) => ({ batch_id: id, events: pack([event(id)]) })));
  assert.deepEqual(acks, ['f1']);
  assert.equal(status.code, grpc.status.UNAVAILABLE);
  assert.equal(calls, 2, 'no batch after the failed one is ingested, though it was received');
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE distinct_id = 'f3'`;
  assert.equal(n, 0);
  close();
});

test('batches sent before any ack are ingested in the order sent: the last $set of a distinct id wins', async () => {
  const { client, close } = await serve();
  const batches = ['v1', 'v2', 'v3', 'v4'].map((v) => ({ batch_id: `o-${v}`,
    events: pack([{ ...event('ordered-user'), properties: { $set: { plan: v } } }, event(`ordered-other-${v}`)]) }));
  const { acks, status } = await run(client, md(), batches);
  assert.deepEqual(acks, ['o-v1', 'o-v2', 'o-v3', 'o-v4']);
  assert.equal(status.code, grpc.status.OK);
  const [p] = await db.sql<{ properties: Record<string, unknown> }[]>`SELECT p.properties FROM persons p
    JOIN person_distinct_ids d ON d.person_id = p.id WHERE d.distinct_id = 'ordered-user'`;
  assert.equal(p!.properties.plan, 'v4');
  close();
});

test('a batch that is not a msgpack array → INVALID_ARGUMENT; bad token → UNAUTHENTICATED', async () => {
  const { client, close } = await serve();
  const bad = await run(client, md(), [{ batch_id: 'x1', events: pack({ not: 'an array' }) }]);
  assert.equal(bad.status.code, grpc.status.INVALID_ARGUMENT);
  assert.deepEqual(bad.acks, []);
  const unauth = await run(client, md('wrong'), [{ batch_id: 'x2', events: pack([event('nope')]) }]);
  assert.equal(unauth.status.code, grpc.status.UNAUTHENTICATED);
  assert.deepEqual(unauth.acks, []);
  close();
});

/** msgpack of `event(distinctId)` with `properties` nested `depth` levels, built byte by byte (msgpackr's packer overflows). */
function deepEventBytes(distinctId: string, depth: number): { uuid: string; bytes: Buffer } {
  const e = event(distinctId);
  const { properties: _drop, ...rest } = e;
  const head = pack(rest); // a map of five entries (fixmap or map16), then its entries
  const entries = head[0] === 0xde ? head.subarray(3) : head.subarray(1);
  const key = Buffer.concat([Buffer.from([0xaa]), Buffer.from('properties')]);
  const levels = Buffer.alloc(depth * 3);
  for (let i = 0; i < depth; i++) levels.set([0x81, 0xa1, 0x61], i * 3); // {"a": …
  return { uuid: e.uuid, bytes: Buffer.concat([Buffer.from([0x86]), entries, key, levels, Buffer.from([0x01])]) };
}

test('a forged batch with a 2,400-deep event and a 6,000-char $anon_distinct_id is acked; both are dead-lettered, the rest ingested', async () => {
  const { client, close } = await serve();
  try {
    const good = [event('dl-good-1'), event('dl-good-2')];
    const deep = deepEventBytes('dl-deep', 2_400);
    const longAnon = { ...event('dl-long'), event: '$identify', properties: { $anon_distinct_id: 'x'.repeat(6_000) } };
    const bytes = Buffer.concat([Buffer.from([0x94]), pack(good[0]), deep.bytes, pack(longAnon), pack(good[1])]);
    const after = event('dl-after');
    const { acks, status } = await run(client, md(), [{ batch_id: 'dl1', events: bytes }, { batch_id: 'dl2', events: pack([after]) }]);
    assert.deepEqual(acks, ['dl1', 'dl2']);
    assert.equal(status.code, grpc.status.OK);
    const stored = await db.sql<{ uuid: string }[]>`SELECT uuid FROM events WHERE uuid = ANY(${[...good, after, longAnon].map((e) => e.uuid)}::uuid[])`;
    assert.deepEqual(stored.map((r) => r.uuid).sort(), [...good, after].map((e) => e.uuid).sort());
    const dead = await db.sql<{ uuid: string | null; reason: string; payload: Buffer }[]>`
      SELECT uuid, reason, payload FROM dead_letter_events WHERE reason NOT LIKE 'database%' ORDER BY id DESC LIMIT 2`;
    assert.deepEqual(dead.map((d) => d.reason).sort(), ['event nests deeper than 256 levels', 'properties.$anon_distinct_id is longer than 200 characters']);
    assert.ok(dead.some((d) => d.payload.equals(deep.bytes)), 'the deep event is kept byte for byte');
    assert.ok(dead.some((d) => d.uuid === longAnon.uuid));
  } finally {
    close();
  }
});

test('an event Postgres refuses for its content is dead-lettered with the database message; its batch is not', async () => {
  // A test-only constraint in this suite's own database: casting 'abc' to int raises 22P02.
  await db.sql`ALTER TABLE events ADD CONSTRAINT dl_test_numeric CHECK (coalesce((properties->>'n')::int, 0) >= 0)`;
  const { client, close } = await serve();
  try {
    const good = event('db-good');
    const bad = { ...event('db-bad'), properties: { n: 'abc' } };
    const { acks, status } = await run(client, md(), [{ batch_id: 'db1', events: pack([good, bad]) }]);
    assert.deepEqual(acks, ['db1']);
    assert.equal(status.code, grpc.status.OK);
    const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE uuid = ANY(${[good.uuid, bad.uuid]}::uuid[])`;
    assert.equal(n, 1);
    const [letter] = await db.sql<{ uuid: string; reason: string }[]>`SELECT uuid, reason FROM dead_letter_events WHERE uuid = ${bad.uuid}`;
    assert.match(letter!.reason, /^database refused the event: invalid input syntax for type integer/);
  } finally {
    close();
    await db.sql`ALTER TABLE events DROP CONSTRAINT dl_test_numeric`;
  }
});

test('a $set that would grow a person past MAX_PROPERTIES_BYTES is not applied; the event is stored', async () => {
  const base = event('blob-user');
  const r1 = await ingestEvents(db.sql, [{ ...base, properties: { $set: { plan: 'pro' } } }]);
  assert.equal(r1.inserted, 1);
  const blob = { ...event('blob-user'), properties: { $set: { blob: 'x'.repeat(600 * 1024) } } };
  const r2 = await ingestEvents(db.sql, [blob]);
  assert.equal(r2.inserted, 1);
  assert.equal(r2.propertiesRefused, 1);
  const [p] = await db.sql<{ properties: Record<string, unknown> }[]>`
    SELECT p.properties FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id WHERE d.distinct_id = 'blob-user'`;
  assert.deepEqual(p!.properties, { plan: 'pro' });
});
