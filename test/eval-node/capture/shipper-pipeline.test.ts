/**
 * The shipper with several batches in flight (shipper.ts): batches are spliced from the stored
 * entries without re-encoding (batch-bytes.ts), sent before earlier ones are acknowledged, and
 * after a stream break everything unacknowledged is sent again from the oldest entry, so the
 * acknowledged events are every appended event once, in append order. A scripted gRPC server
 * stands in for the control plane (the real handler's ordering is covered by
 * test/control-plane/grpc/ingest.test.ts and the system capture tests).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { Packr, unpack } from 'msgpackr';
import { createLogger } from '../../../src/log.js';
import { Outbox } from '../../../src/eval-node/capture/outbox.js';
import { MAX_BATCH_ENTRIES, MAX_IN_FLIGHT, Shipper } from '../../../src/eval-node/capture/shipper.js';
import { arrayHeader, concatMsgpackArrays } from '../../../src/eval-node/capture/batch-bytes.js';
import type { CapturedEvent } from '../../../src/contract/events.js';

const PROTO = `syntax = "proto3";
package switchyard.v1;
service Switchyard { rpc Ingest(stream IngestBatch) returns (stream IngestAck); }
message IngestBatch { string batch_id = 1; bytes events = 2; }
message IngestAck { string batch_id = 1; }`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-shipper-pipeline-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
fs.writeFileSync(path.join(tmp, 'ingest.proto'), PROTO);
const def = protoLoader.loadSync(path.join(tmp, 'ingest.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const Client = (grpc.loadPackageDefinition(def) as any).switchyard.v1.Switchyard as grpc.ServiceClientConstructor;
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

test('concatMsgpackArrays: the elements of every array, in order, under one header of the right width', () => {
  const arrays = [[], [1], Array.from({ length: 15 }, (_, i) => ({ i })), ['x'.repeat(40)], Array.from({ length: 70_000 }, (_, i) => i % 7)];
  for (let n = 0; n <= arrays.length; n++) {
    const parts = arrays.slice(0, n);
    const joined = concatMsgpackArrays(parts.map((a) => packr.pack(a)))!;
    assert.deepEqual(unpack(joined), parts.flat(), `${n} parts`);
    const count = parts.flat().length;
    assert.equal(arrayHeader(joined)!.headerBytes, count < 16 ? 1 : count < 65_536 ? 3 : 5);
  }
  assert.equal(concatMsgpackArrays([packr.pack([1]), packr.pack({ not: 'an array' })]), null);
  assert.equal(arrayHeader(Buffer.alloc(0)), null);
});

test('several batches in flight, acked in order; after a break the oldest unacknowledged is sent first and every event is acknowledged once, in order', async () => {
  const outbox = Outbox.open({ path: path.join(tmp, 'ob'), maxBytes: 64 << 20 });
  const entries = MAX_BATCH_ENTRIES * MAX_IN_FLIGHT + 7;
  const ev = (i: number): CapturedEvent => ({ uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, project_id: 1, event: 'e', distinct_id: `d-${i % 5}`, properties: { i }, timestamp: '2026-01-01T00:00:00.000Z' });
  await Promise.all(Array.from({ length: entries }, (_, i) => outbox.append([ev(2 * i), ev(2 * i + 1)])));
  const calls: { batch_id: string; events: number[] }[][] = [];
  const acked: number[] = [];
  const server = new grpc.Server();
  server.addService(Client.service, {
    Ingest: ((call: grpc.ServerDuplexStream<any, any>) => {
      const stream = calls.length;
      const received: { batch_id: string; events: number[] }[] = [];
      calls.push(received);
      const ack = (b: { batch_id: string; events: number[] }) => { acked.push(...b.events); call.write({ batch_id: b.batch_id }); };
      call.on('data', (b: { batch_id: string; events: Buffer }) => {
        received.push({ batch_id: b.batch_id, events: (unpack(b.events) as CapturedEvent[]).map((e) => e.properties.i as number) });
        if (stream > 0) { ack(received.at(-1)!); return; }
        // First call: nothing is acked until MAX_IN_FLIGHT batches arrived, then the first is
        // acked and the call fails as a lost control plane would.
        if (received.length === MAX_IN_FLIGHT) {
          ack(received[0]!);
          setImmediate(() => call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'gone' }));
        }
      });
      call.on('end', () => call.end());
    }) as grpc.UntypedHandleCall,
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  const shipper = new Shipper({ outbox, log: createLogger('silent'), openStream: () => client.Ingest(new grpc.Metadata()), idlePollMs: 20, backoffBaseMs: 10, backoffCapMs: 20, ackTimeoutMs: 10_000 });
  try {
    shipper.start();
    const end = Date.now() + 20_000;
    while (outbox.entries > 0) {
      if (Date.now() > end) throw new Error(`outbox not drained: ${outbox.entries} left, calls ${calls.map((c) => c.length)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(calls[0]!.length, MAX_IN_FLIGHT, 'the first call had the window full before any ack');
    assert.equal(calls[1]![0]!.batch_id, calls[0]![1]!.batch_id, 'the second call starts with the oldest unacknowledged batch');
    assert.deepEqual(acked, Array.from({ length: 2 * entries }, (_, i) => i), 'every event acknowledged once, in append order');
  } finally {
    await shipper.stop();
    client.close();
    server.forceShutdown();
    await outbox.close();
  }
});
