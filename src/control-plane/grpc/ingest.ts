/**
 * gRPC `Ingest` (proto/switchyard.proto: `rpc Ingest(stream IngestBatch) returns (stream
 * IngestAck)`): a node streams batches from its capture outbox; each batch (`events` = msgpack
 * array of CapturedEvent, ingestion/types.ts) is ingested in one transaction and acknowledged
 * with `IngestAck{batch_id}` only after that transaction has committed. Batches of one call
 * are processed one at a time, in order (stream backpressure holds the rest).
 *
 * Failure answers (the call ends; the node keeps the batch and retries later):
 * - wrong or missing cluster token → UNAUTHENTICATED before any batch is read;
 * - `events` that is not a msgpack array → INVALID_ARGUMENT naming the batch (a node should
 *   drop such a batch: retrying cannot help);
 * - a database error → UNAVAILABLE (nothing of the batch was committed).
 * Malformed single events inside a valid batch do not fail it: they are skipped and logged
 * (ingestion/service.ts), so one bad event can never wedge a node's outbox.
 *
 * Wiring (the gRPC server of the `node` branch): `Ingest: createIngestHandler({ sql, log,
 * authorize: (md) => hasClusterToken(md, token) }) as grpc.UntypedHandleCall`.
 */
import * as grpc from '@grpc/grpc-js';
import { unpack } from 'msgpackr';
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { ingestEvents, type IngestResult } from '../ingestion/service.js';

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
  /** Ingestion function (tests inject failures); defaults to {@link ingestEvents}. */
  ingest?: (sql: Sql, events: readonly unknown[]) => Promise<IngestResult>;
}

/** Builds the bidi-streaming `Ingest` handler. */
export function createIngestHandler(deps: IngestHandlerDeps): (call: IngestCall) => void {
  const ingest = deps.ingest ?? ingestEvents;
  const log = deps.log.child({ component: 'grpc-ingest' });
  return (call: IngestCall) => {
    if (!deps.authorize(call.metadata)) {
      call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid cluster token' });
      return;
    }
    // Event-driven rather than `for await`: a Duplex's async iterator waits for 'close', which
    // grpc-js emits only after the response side ends, so it would never see the client's
    // half-close. The stream is paused while a batch is ingested (backpressure, strict order).
    const queue: IngestBatchMessage[] = [];
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
          const batch = queue.shift()!;
          let events: unknown;
          try {
            events = batch.events.length === 0 ? [] : unpack(batch.events as Buffer);
          } catch {
            events = undefined;
          }
          if (!Array.isArray(events)) {
            log.warn({ batch_id: batch.batch_id }, 'ingest batch is not a msgpack array');
            fail(grpc.status.INVALID_ARGUMENT, `batch ${batch.batch_id}: events must be a msgpack array`);
            return;
          }
          let result: IngestResult;
          try {
            result = await ingest(deps.sql, events);
          } catch (err) {
            log.error({ err, batch_id: batch.batch_id }, 'ingest batch failed');
            fail(grpc.status.UNAVAILABLE, `batch ${batch.batch_id} was not ingested; retry later`);
            return;
          }
          if (result.invalid > 0) log.warn({ batch_id: batch.batch_id, invalid: result.invalid }, 'skipped malformed events');
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
      queue.push(batch);
      call.pause();
      void pump();
    });
    call.on('end', () => {
      inputEnded = true;
      void pump();
    });
    call.on('error', () => { failed = true; });
  };
}
