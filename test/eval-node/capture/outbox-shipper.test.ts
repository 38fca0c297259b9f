/**
 * The LMDB outbox and the shipper end to end: handleCapture → outbox (on disk) → gRPC Ingest
 * (real server, the control plane's handler) → Postgres; entries leave only once acknowledged.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { createLogger } from '../../../src/log.js';
import { createIngestHandler, type IngestHandlerDeps } from '../../../src/control-plane/grpc/ingest.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { Outbox, OutboxFullError, shedRetryAfter } from '../../../src/eval-node/capture/outbox.js';
import { MAX_OUTBOX_BYTES } from '../../../src/limits.js';
import { loadConfig } from '../../../src/config.js';
import { Shipper } from '../../../src/eval-node/capture/shipper.js';
import { handleCapture } from '../../../src/eval-node/capture/handler.js';
import type { CapturedEvent } from '../../../src/contract/events.js';

const PROTO = `syntax = "proto3";
package switchyard.v1;
service Switchyard { rpc Ingest(stream IngestBatch) returns (stream IngestAck); }
message IngestBatch { string batch_id = 1; bytes events = 2; }
message IngestAck { string batch_id = 1; }`;
const TOKEN = 'phc_outbox_shipper_token';
const log = createLogger('silent');

let db: TestDatabase;
let projectId: number;
let Client: grpc.ServiceClientConstructor;
let tmp: string;

before(async () => {
  db = await createTestDatabase();
  const [org] = await db.sql<{ id: number }[]>`INSERT INTO organizations (name) VALUES ('o') RETURNING id`;
  const [p] = await db.sql<{ id: number }[]>`INSERT INTO projects (organization_id, name, api_token) VALUES (${org!.id}, 'p', ${TOKEN}) RETURNING id`;
  projectId = p!.id;
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-outbox-'));
  fs.writeFileSync(path.join(tmp, 'ingest.proto'), PROTO);
  const def = protoLoader.loadSync(path.join(tmp, 'ingest.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  Client = (grpc.loadPackageDefinition(def) as any).switchyard.v1.Switchyard;
});
after(async () => {
  await db.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function waitFor(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function serve(handler: grpc.UntypedHandleCall, port = 0) {
  const server = new grpc.Server();
  server.addService(Client.service, { Ingest: handler });
  const bound = await new Promise<number>((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (e, p) => e ? reject(e) : resolve(p)));
  return { port: bound, close: () => server.forceShutdown() };
}

function controlPlaneHandler(overrides: Partial<IngestHandlerDeps> = {}): grpc.UntypedHandleCall {
  return createIngestHandler({ sql: db.sql, log, authorize: () => true, ...overrides }) as grpc.UntypedHandleCall;
}

function shipperFor(outbox: Outbox, port: number) {
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  const shipper = new Shipper({ outbox, log, openStream: () => client.Ingest(new grpc.Metadata()), idlePollMs: 20, backoffBaseMs: 10, backoffCapMs: 50, ackTimeoutMs: 5_000 });
  return { shipper, client };
}

function ev(distinctId: string): CapturedEvent {
  return { uuid: crypto.randomUUID(), project_id: projectId, event: 'outbox-test', distinct_id: distinctId, properties: {}, timestamp: new Date().toISOString() };
}

async function countEvents(distinctPrefix: string): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE distinct_id LIKE ${distinctPrefix + '%'}`;
  return n;
}

test('outbox: append is durable across reopen, peek is oldest first, remove deletes, the bound refuses', async () => {
  const dir = path.join(tmp, 'ob1');
  const a = Outbox.open({ path: dir, maxBytes: 10_000 });
  await a.append([ev('a1')]);
  await a.append([ev('a2'), ev('a3')]);
  const bytes = a.bytes;
  await a.close();
  const b = Outbox.open({ path: dir, maxBytes: 10_000 });
  assert.equal(b.entries, 2);
  assert.equal(b.bytes, bytes);
  const peeked = b.peek(10);
  assert.deepEqual(peeked.map((e) => e.events.map((x) => x.distinct_id)), [['a1'], ['a2', 'a3']]);
  assert.deepEqual(b.peek(1).map((e) => e.key), [peeked[0]!.key]);
  await b.remove([peeked[0]!]);
  assert.equal(b.entries, 1);
  await b.append([ev('a4')]);
  assert.ok(b.peek(10)[1]!.key > peeked[1]!.key, 'keys keep increasing');
  const big = Array.from({ length: 200 }, (_, i) => ev(`big${i}`));
  await assert.rejects(b.append(big), OutboxFullError);
  assert.equal(b.entries, 2, 'a refused append stores nothing');
  await b.close();
});

test('an outbox bound past 8 TiB is refused before anything is mapped, by the outbox and by the configuration', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-outbox-bound-'));
  try {
    // LMDB maps twice the bound up front: Number.MAX_SAFE_INTEGER crashed the process with SIGSEGV.
    for (const maxBytes of [Number.MAX_SAFE_INTEGER, MAX_OUTBOX_BYTES + 1, 0]) {
      assert.throws(() => Outbox.open({ path: dir, maxBytes }), RangeError, String(maxBytes));
    }
    assert.throws(() => loadConfig({ SWITCHYARD_MAX_OUTBOX_BYTES: String(Number.MAX_SAFE_INTEGER) }), /SWITCHYARD_MAX_OUTBOX_BYTES/);
    assert.equal(loadConfig({ SWITCHYARD_MAX_OUTBOX_BYTES: String(MAX_OUTBOX_BYTES) }).maxOutboxBytes, MAX_OUTBOX_BYTES);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('shedding: none below 80 % of the bound, a share rising to all at the bound, Retry-After from 1 to 30 s', () => {
  assert.equal(shedRetryAfter(0.79, 0), null);
  assert.equal(shedRetryAfter(0.9, 0.49), 16, 'at 90 % half the draws are shed');
  assert.equal(shedRetryAfter(0.9, 0.5), null);
  assert.equal(shedRetryAfter(1, 0.999), 30);
  assert.equal(shedRetryAfter(0.8, 0), null, 'at exactly 80 % nothing is shed yet');
});

test('outbox: client appends are shed past 80 % of the bound, own records are not; shed appends store nothing', async () => {
  let draw = 0.99;
  const o = Outbox.open({ path: path.join(tmp, 'ob-shed'), maxBytes: 10_000, random: () => draw });
  let n = 0;
  while (o.fill < 0.8) await o.append([ev(`s${n++}`)], true);
  const entries = o.entries;
  const bytes = o.bytes;
  draw = 0;
  const err = await o.append([ev('shed')], true).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof OutboxFullError && err.backlog && err.retryAfterS >= 1, String(err));
  assert.equal(o.shedCount, 1);
  assert.equal(o.entries, entries);
  assert.equal(o.bytes, bytes);
  await o.append([ev('own-record')]);
  assert.equal(o.entries, entries + 1, 'appends not marked sheddable pass');
  draw = 0.99;
  await o.append([ev('lucky')], true);
  assert.equal(o.entries, entries + 2);
  await o.close();
});

test('captured requests reach Postgres and leave the outbox once acknowledged', async () => {
  const outbox = Outbox.open({ path: path.join(tmp, 'ob2'), maxBytes: 1 << 20 });
  const server = await serve(controlPlaneHandler());
  const { shipper, client } = shipperFor(outbox, server.port);
  const store = {
    projectIdForToken: (t: string) => (t === TOKEN ? projectId : null),
    append: async (events: CapturedEvent[]) => { await outbox.append(events); shipper.notify(); },
  };
  for (let i = 0; i < 5; i++) {
    const r = await handleCapture('/batch/', '', { 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ api_key: TOKEN, batch: [{ event: 'e2e', distinct_id: `e2e-${i}` }, { event: 'e2e', distinct_id: `e2e-${i}b` }] })), store);
    assert.equal(r.status, 200);
  }
  assert.equal(outbox.entries, 5, 'accepted before shipping');
  shipper.start();
  await waitFor(() => outbox.entries === 0, 'outbox drained');
  assert.equal(await countEvents('e2e-'), 10);
  assert.equal(outbox.bytes, 0);
  await shipper.stop();
  client.close();
  server.close();
  await outbox.close();
});

test('failed batches stay in the outbox and are retried until acknowledged', async () => {
  const outbox = Outbox.open({ path: path.join(tmp, 'ob3'), maxBytes: 1 << 20 });
  let failures = 0;
  const entriesAtFailure: number[] = [];
  const server = await serve(controlPlaneHandler({
    ingest: async (sql, evs) => {
      if (failures < 3) { failures++; entriesAtFailure.push(outbox.entries); throw new Error('db down'); }
      return ingestEvents(sql, evs);
    },
  }));
  await outbox.append([ev('retry-1'), ev('retry-2')]);
  const { shipper, client } = shipperFor(outbox, server.port);
  shipper.start();
  await waitFor(() => outbox.entries === 0, 'outbox drained after retries');
  assert.equal(failures, 3);
  assert.deepEqual(entriesAtFailure, [1, 1, 1], 'the batch stayed stored through every failure');
  assert.equal(await countEvents('retry-'), 2);
  await shipper.stop();
  client.close();
  server.close();
  await outbox.close();
});

test('control plane down at first: the shipper reconnects when it comes up', async () => {
  const outbox = Outbox.open({ path: path.join(tmp, 'ob4'), maxBytes: 1 << 20 });
  const probe = await serve(controlPlaneHandler());
  const port = probe.port;
  probe.close();
  await outbox.append([ev('late-1')]);
  const { shipper, client } = shipperFor(outbox, port);
  shipper.start();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(outbox.entries, 1, 'kept while unreachable');
  const server = await serve(controlPlaneHandler(), port);
  await waitFor(() => outbox.entries === 0, 'outbox drained after reconnect', 20_000);
  assert.equal(await countEvents('late-'), 1);
  await shipper.stop();
  client.close();
  server.close();
  await outbox.close();
});

test('a batch refused with INVALID_ARGUMENT is dropped instead of wedging the outbox', async () => {
  const outbox = Outbox.open({ path: path.join(tmp, 'ob5'), maxBytes: 1 << 20 });
  let calls = 0;
  const server = await serve(((call: grpc.ServerDuplexStream<any, any>) => {
    call.on('data', (b: { batch_id: string }) => {
      calls++;
      if (calls === 1) call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'poison' });
      else call.write({ batch_id: b.batch_id });
    });
    call.on('end', () => call.end());
  }) as grpc.UntypedHandleCall);
  await outbox.append([ev('poison')]);
  const { shipper, client } = shipperFor(outbox, server.port);
  shipper.start();
  await waitFor(() => outbox.entries === 0, 'poison dropped');
  await outbox.append([ev('after-poison')]);
  shipper.notify();
  await waitFor(() => outbox.entries === 0, 'next batch shipped');
  assert.equal(calls, 2);
  await shipper.stop();
  client.close();
  server.close();
  await outbox.close();
});

test('startCapture: events accepted while the control plane is down survive a restart and are shipped', async () => {
  const { startCapture } = await import('../../../src/eval-node/capture/index.js');
  const { testConfig } = await import('../../../src/config.js');
  const config = testConfig({ dataDir: path.join(tmp, 'node-data') });
  const probe = await serve(controlPlaneHandler());
  const port = probe.port;
  probe.close();
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  const opts = { config, log, projectIdForToken: (t: string) => (t === TOKEN ? projectId : null), openStream: () => client.Ingest(new grpc.Metadata()) };
  const first = startCapture(opts);
  for (const id of ['restart-1', 'restart-2']) {
    const r = await first.handler('/i/v0/e/', '', { 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ api_key: TOKEN, event: 'r', distinct_id: id })));
    assert.equal(r.status, 200);
  }
  await first.close();
  const server = await serve(controlPlaneHandler(), port);
  const second = startCapture(opts);
  assert.equal(second.outbox.entries, 2, 'both requests were on disk');
  await waitFor(async () => (await countEvents('restart-')) === 2 && second.outbox.entries === 0, 'shipped after restart', 20_000);
  await second.close();
  client.close();
  server.close();
});

test('startCapture: close() waits for the appends in flight; captures after it answer 503 shutting_down and write nothing', async () => {
  const { startCapture } = await import('../../../src/eval-node/capture/index.js');
  const { testConfig } = await import('../../../src/config.js');
  const config = testConfig({ dataDir: path.join(tmp, 'node-closing') });
  const client = new Client('127.0.0.1:1', grpc.credentials.createInsecure()) as any;
  const capture = startCapture({ config, log, projectIdForToken: (t: string) => (t === TOKEN ? projectId : null), openStream: () => client.Ingest(new grpc.Metadata()) });
  const body = (id: string) => Buffer.from(JSON.stringify({ api_key: TOKEN, batch: Array.from({ length: 200 }, (_, i) => ({ event: 'c', distinct_id: `${id}-${i}` })) }));
  // Appends in flight when close() is called complete and are on disk; a capture after it is
  // refused with 503 shutting_down (its client retries elsewhere) and nothing of it is written.
  const inFlight = Array.from({ length: 5 }, (_, i) => capture.append(Array.from({ length: 200 }, (_, j) => ev(`closing-${i}-${j}`))));
  const closed = capture.close();
  const late = await capture.handler('/batch/', '', { 'content-type': 'application/json' }, body('late'));
  assert.equal(late.status, 503);
  assert.equal((late.body as { code?: string }).code, 'shutting_down');
  await Promise.all(inFlight);
  await closed;
  client.close();
  const reopened = Outbox.open({ path: path.join(config.dataDir, 'capture-outbox'), maxBytes: config.maxOutboxBytes });
  assert.equal(reopened.entries, 5, 'the five acknowledged requests are on disk, the refused one is not');
  await reopened.close();
});
