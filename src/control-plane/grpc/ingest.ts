/**
 * gRPC `Ingest` (proto/switchyard.proto: `rpc Ingest(stream IngestBatch) returns (stream
 * IngestAck)`): a node streams batches from its capture outbox; each batch (`events` = msgpack
 * array of CapturedEvent, contract/events.ts) is ingested in one transaction and acknowledged
 * with `IngestAck{batch_id}` only after that transaction has committed. Batches of one call
 * are ingested one at a time, in the order received, and acknowledged in that order; a node may
 * send several before the first ack (eval-node/capture/shipper.ts). Up to {@link MAX_QUEUED}
 * received batches are decoded while an earlier one is in its transaction (the decoding overlaps
 * Postgres' work); beyond that the stream is paused (backpressure). After a failure no later
 * batch of the call is ingested, so what a call commits is always a prefix of what it sent.
 *
 * Failure answers (the call ends; the node keeps the batch and retries later):
 * - wrong or missing cluster token → UNAUTHENTICATED before any batch is read;
 * - `events` that is not a msgpack array → dead-lettered whole, then INVALID_ARGUMENT naming
 *   the batch (a node drops such a batch: retrying cannot help);
 * - a transient database error → UNAVAILABLE (nothing of the batch was committed).
 * Single events that can never be ingested do not fail their batch: too deep
 * to decode ({@link decodeBatch}), breaking the event bounds, or refused by Postgres for their
 * content (ingestion/service.ts `ingestBatch`), they go to `dead_letter_events` with the reason,
 * one warn log line each, and the rest of the batch is ingested and acknowledged. Malformed
 * events (no uuid, name, distinct id) are skipped and counted as before.
 *
 * Wiring (the gRPC server of the `node` branch): `Ingest: createIngestHandler({ sql, log,
 * authorize: (md) => hasClusterToken(md, token) }) as grpc.UntypedHandleCall`.
 */
import * as grpc from '@grpc/grpc-js';
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { ingestBatch, type IngestResult } from '../ingestion/service.js';
import { deadLetterOf, writeDeadLetters, type DeadLetter } from '../ingestion/dead-letter.js';
import { splitMsgpackArray } from '../../contract/msgpack-depth.js';
import { unpackTrusted } from '../../contract/payload.js';
import { MAX_PAYLOAD_DEPTH } from '../../limits.js';

/** Received batches held (decoded) before the stream is paused. */
export const MAX_QUEUED = 2;

/** `IngestBatch` as @grpc/proto-loader decodes it (keepCase, bytes → Buffer). */
export interface IngestBatchMessage { batch_id: string; events: Buffer | Uint8Array }
/** `IngestAck`. */
export interface IngestAckMessage { batch_id: string }

/** The call shape the handler needs (grpc-js `ServerDuplexStream<IngestBatch, IngestAck>`). */
export type IngestCall = grpc.ServerDuplexStream<IngestBatchMessage, IngestAckMessage>;

/** Dependencies of {@link createIngestHandler}. */
export interface IngestHandlerDeps {
  sql: Sql;
  log: Logger;
  /** True when the call's metadata carries the cluster token. */
  authorize(metadata: grpc.Metadata): boolean;
  /** Ingestion function (tests inject failures); defaults to {@link ingestBatch}. */
  ingest?: (sql: Sql, events: readonly unknown[], dead?: readonly DeadLetter[]) => Promise<IngestResult>;
}

/**
 * A batch's events, each decoded on its own (contract/msgpack-depth.ts `splitMsgpackArray`): an
 * event nested deeper than MAX_PAYLOAD_DEPTH, or not msgpack, becomes a dead letter with its
 * bytes instead of failing the batch (msgpackr's recursion overflows near 1,250 levels).
 * @returns null when the bytes are not a msgpack array at all.
 */
export function decodeBatch(bytes: Uint8Array): { events: unknown[]; dead: DeadLetter[] } | null {
  const split = splitMsgpackArray(bytes);
  if (split === null) return null;
  const events: unknown[] = [];
  const dead: DeadLetter[] = [];
  for (const el of split.elements) {
    if (el.depth > MAX_PAYLOAD_DEPTH) { dead.push(deadLetterOf(undefined, `event nests deeper than ${MAX_PAYLOAD_DEPTH} levels`, el.bytes)); continue; }
    try { events.push(unpackTrusted(el.bytes)); } catch (e) { dead.push(deadLetterOf(undefined, `event is not valid msgpack: ${(e as Error).message}`, el.bytes)); }
  }
  if (split.rest !== null) dead.push(deadLetterOf(undefined, 'malformed msgpack from here to the end of the batch', split.rest));
  return { events, dead };
}

/** Builds the bidi-streaming `Ingest` handler. */
export function createIngestHandler(deps: IngestHandlerDeps): (call: IngestCall) => void {
  const ingest = deps.ingest ?? ingestBatch;
  const log = deps.log.child({ component: 'grpc-ingest' });
  return (call: IngestCall) => {
    if (!deps.authorize(call.metadata)) {
      call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid cluster token' });
      return;
    }
    // Event-driven rather than `for await`: a Duplex's async iterator waits for 'close', which
    // grpc-js emits only after the response side ends, so it would never see the client's
    // half-close. The stream is paused while a batch is ingested (backpressure, strict order).
    const queue: { batch: IngestBatchMessage; decoded: ReturnType<typeof decodeBatch> }[] = [];
    let busy = false;
    let inputEnded = false;
    let failed = false;
    const fail = (code: grpc.status, details: string) => {
      failed = true;
      queue.length = 0;
      call.emit('error', { code, details });
    };
    const pump = async (): Promise<void> => {
      if (busy) return;
      busy = true;
      try {
        while (!failed && !call.cancelled && queue.length > 0) {
          const { batch, decoded } = queue.shift()!;
          if (queue.length < MAX_QUEUED) call.resume();
          if (decoded === null) {
            log.warn({ batch_id: batch.batch_id }, 'ingest batch is not a msgpack array; dead-lettered');
            try {
              await writeDeadLetters(deps.sql, [deadLetterOf(undefined, 'batch is not a msgpack array', batch.events)]);
            } catch (err) {
              log.error({ err, batch_id: batch.batch_id }, 'writing a dead letter failed');
              fail(grpc.status.UNAVAILABLE, `batch ${batch.batch_id} was not ingested; retry later`);
              return;
            }
            fail(grpc.status.INVALID_ARGUMENT, `batch ${batch.batch_id}: events must be a msgpack array`);
            return;
          }
          let result: IngestResult;
          try {
            result = await ingest(deps.sql, decoded.events, decoded.dead);
          } catch (err) {
            log.error({ err, batch_id: batch.batch_id }, 'ingest batch failed');
            fail(grpc.status.UNAVAILABLE, `batch ${batch.batch_id} was not ingested; retry later`);
            return;
          }
          if (result.invalid > 0) log.warn({ batch_id: batch.batch_id, invalid: result.invalid }, 'skipped malformed events');
          for (const d of result.deadLetters ?? []) {
            log.warn({ batch_id: batch.batch_id, project_id: d.projectId, uuid: d.uuid, reason: d.reason }, 'event dead-lettered');
          }
          if (result.propertiesRefused) {
            log.warn({ batch_id: batch.batch_id, refused: result.propertiesRefused }, 'person or group property updates over the size bound were not applied');
          }
          if (call.cancelled) return;
          call.write({ batch_id: batch.batch_id });
        }
        if (inputEnded && !failed && !call.cancelled) call.end();
      } finally {
        busy = false;
        if (!failed && !call.cancelled) call.resume();
      }
    };
    call.on('data', (batch: IngestBatchMessage) => {
      if (failed) return;
      queue.push({ batch, decoded: batch.events.length === 0 ? { events: [], dead: [] } : decodeBatch(batch.events) });
      if (queue.length >= MAX_QUEUED) call.pause();
      void pump();
    });
    call.on('end', () => {
      inputEnded = true;
      void pump();
    });
    call.on('error', () => { failed = true; });
  };
}
