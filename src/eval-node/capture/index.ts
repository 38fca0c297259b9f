/**
 * Capture on an evaluation node, wired in one call: the durable outbox (its own LMDB
 * environment under `<dataDir>/capture-outbox`, so outbox writes never contend with the
 * definition store's sync transactions and survive a store rebuild), the shipper, and a handler
 * with the node HTTP layer's `CaptureHandler` signature `(path, query, headers, body)`.
 *
 * Node wiring (eval-node/node.ts + http/server.ts of the `node` branch):
 * ```ts
 * const client = new (switchyardService())(config.controlPlane, grpc.credentials.createInsecure());
 * const capture = startCapture({
 *   config, log,
 *   projectIdForToken: (t) => store.projectByToken(t)?.id ?? null,
 *   openStream: () => client.Ingest(clusterTokenMetadata(config.clusterToken!)),
 * });
 * startNodeHttp({ ..., capture: capture.handler, captureAppend: capture.append });   // and capture.close() on shutdown
 * ```
 */
import path from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { CapturedEvent } from '../../contract/events.js';
import { handleCapture, type CaptureReply } from './handler.js';
import { Outbox, OutboxFullError } from './outbox.js';

/** Retry-After of an append refused because the node is stopping, in seconds. */
const STOPPING_RETRY_AFTER_S = 1;
import { Shipper, type IngestClientCall } from './shipper.js';

/** Location of the outbox environment inside the data dir. */
export function captureOutboxPath(config: Config): string {
  return path.join(config.dataDir, 'capture-outbox');
}

/** Options of {@link startCapture}. */
export interface CaptureOptions {
  config: Config;
  log: Logger;
  /** Project id of a project API key from the node store, or null. */
  projectIdForToken(token: string): number | null;
  /** Whether the node store holds a complete snapshot (before it, unknown tokens answer 503). */
  ready?(): boolean;
  /** Opens a gRPC `Ingest` call to the control plane (with the cluster-token metadata). */
  openStream(): IngestClientCall;
  /** Overrides {@link captureOutboxPath} (tests). */
  outboxPath?: string;
}

/** A running capture service. */
export interface CaptureService {
  /** Handles one capture request (never rejects for client errors). */
  handler(path: string, query: string, headers: IncomingHttpHeaders, body: Buffer): Promise<CaptureReply>;
  /**
   * Appends records the node itself produces (e.g. hash-key override records of /flags,
   * http/continuity.ts) to the outbox, durably, and wakes the shipper. @throws OutboxFullError.
   */
  append(events: CapturedEvent[]): Promise<void>;
  /**
   * {@link append} of events packed by {@link Outbox.pack} (on an IO thread); `shed` for a client
   * request's events (outbox.ts). @throws OutboxFullError.
   */
  appendPacked(packed: Uint8Array, shed?: boolean): Promise<void>;
  outbox: Outbox;
  shipper: Shipper;
  /**
   * Stops shipping and closes the outbox (stored events stay for the next start), after the
   * appends in flight; appends from then on fail with OutboxFullError `stopping` (503).
   */
  close(): Promise<void>;
}

/** Opens the outbox (bounded by `config.maxOutboxBytes`) and starts shipping. */
export function startCapture(opts: CaptureOptions): CaptureService {
  const outbox = Outbox.open({ path: opts.outboxPath ?? captureOutboxPath(opts.config), maxBytes: opts.config.maxOutboxBytes });
  const shipper = new Shipper({ outbox, log: opts.log, openStream: opts.openStream });
  // Appends in flight: close() waits for them before it closes the outbox's environment, and
  // refuses new ones once it began (503 shutting_down, retry), so a stopping node never writes
  // to a closed environment and never drops an event it is about to acknowledge.
  const inFlight = new Set<Promise<void>>();
  let closing: Promise<void> | null = null;
  const guarded = async (write: () => Promise<void>): Promise<void> => {
    if (closing) throw new OutboxFullError(opts.config.maxOutboxBytes, STOPPING_RETRY_AFTER_S, false, true);
    const p = write();
    inFlight.add(p);
    try { await p; } finally { inFlight.delete(p); }
    shipper.notify();
  };
  const store = {
    projectIdForToken: opts.projectIdForToken,
    ready: opts.ready,
    append: (events: Parameters<Outbox['append']>[0]) => guarded(() => outbox.append(events, true)),
  };
  shipper.start();
  return {
    handler: (p, q, h, b) => handleCapture(p, q, h, b, store, Date.now(), opts.config.maxCaptureBodyBytes),
    append: (events) => guarded(() => outbox.append(events)),
    appendPacked: (packed, shed = false) => guarded(() => outbox.appendPacked(packed, shed)),
    outbox,
    shipper,
    close() {
      closing ??= (async () => {
        await Promise.allSettled([...inFlight]);
        await shipper.stop();
        await outbox.close();
      })();
      return closing;
    },
  };
}
