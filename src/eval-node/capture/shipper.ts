/**
 * Ships the capture outbox to the control plane over gRPC `Ingest` (bidi stream of
 * `IngestBatch{batch_id, events: msgpack array}` → `IngestAck{batch_id}`), deleting entries only
 * after their batch is acknowledged (the control plane acks after commit). Delivery is at least
 * once: a batch whose ack was lost is sent again and deduplicated by event uuid upstream.
 *
 * One batch is in flight at a time, oldest entries first, up to {@link MAX_BATCH_ENTRIES}
 * entries and {@link MAX_BATCH_BYTES} of payload. An entry larger than that on its own (one big
 * capture request) is shipped as several batches of its events, each acknowledged before the
 * next, and removed after the last: one gRPC message must stay under the server's 4 MiB limit,
 * or the batch would fail with RESOURCE_EXHAUSTED forever and hold up every later event. The
 * stream stays open between batches.
 * On a stream error or an ack timeout the stream is dropped and reopened after a capped,
 * jittered exponential backoff. A batch refused with INVALID_ARGUMENT can never succeed, so it
 * is dropped (logged) rather than wedging the outbox.
 *
 * Wiring (eval-node): `new Shipper({ outbox, log, openStream: () => client.Ingest(clusterTokenMetadata(token)) })`,
 * `start()`, call `notify()` after each accepted request, `stop()` on shutdown.
 */
import * as grpc from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import type { Logger } from '../../log.js';
import type { Outbox, OutboxEntry } from './outbox.js';

/** Largest number of outbox entries (requests) per batch. */
export const MAX_BATCH_ENTRIES = 500;
/** Largest payload per batch, in bytes (below gRPC's default 4 MiB message limit). */
export const MAX_BATCH_BYTES = 3 * 1024 * 1024;
/** How long to wait for an ack before treating the stream as broken, in milliseconds. */
export const ACK_TIMEOUT_MS = 30_000;
/** Poll interval when idle and not notified, in milliseconds. */
export const IDLE_POLL_MS = 1_000;
/** Reconnect backoff: base and cap in milliseconds; delay = random(0, min(cap, base·2^attempt)). */
export const BACKOFF_BASE_MS = 200;
/** Reconnect backoff cap in milliseconds (see {@link BACKOFF_BASE_MS}). */
export const BACKOFF_CAP_MS = 10_000;

/** `IngestBatch` as the client writes it (`events`: msgpack array of CapturedEvent). */
export interface IngestBatchOut { batch_id: string; events: Buffer }
/** `IngestAck` as the client reads it. */
export interface IngestAckIn { batch_id: string }
/** A client-side Ingest call. */
export type IngestClientCall = grpc.ClientDuplexStream<IngestBatchOut, IngestAckIn>;

/** Options of {@link Shipper}. */
export interface ShipperOptions {
  outbox: Outbox;
  log: Logger;
  /** Opens a new Ingest call (with the cluster-token metadata). */
  openStream: () => IngestClientCall;
  ackTimeoutMs?: number;
  idlePollMs?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
}

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** Thrown inside the loop when a batch is refused for good. */
class PoisonBatch extends Error {}

/** The outbox shipper. */
export class Shipper {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private call: IngestClientCall | null = null;
  private pending: { batchId: string; resolve: () => void; reject: (e: Error) => void } | null = null;
  private readonly log: Logger;
  /** Batches acknowledged since start (metrics, tests). */
  shippedBatches = 0;

  constructor(private readonly opts: ShipperOptions) {
    this.log = opts.log.child({ component: 'capture-shipper' });
  }

  /** Starts the loop (idempotent). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** New entries were appended: ship without waiting for the poll. */
  notify(): void {
    this.wake?.();
  }

  /** Stops the loop; an in-flight batch stays in the outbox unless already acknowledged. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    this.dropStream(new Error('shipper stopped'));
    await this.loop;
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (this.running) {
      const entries = this.opts.outbox.peek(MAX_BATCH_ENTRIES, MAX_BATCH_BYTES);
      if (entries.length === 0) {
        await this.sleep(this.opts.idlePollMs ?? IDLE_POLL_MS);
        continue;
      }
      try {
        for (const part of batches(entries)) await this.ship(part.id, part.events);
        await this.opts.outbox.remove(entries);
        this.shippedBatches++;
        attempt = 0;
      } catch (e) {
        if (e instanceof PoisonBatch) {
          this.log.error({ batch_id: batchId(entries), events: entries.reduce((n, x) => n + x.events.length, 0) }, 'control plane refused a batch; dropping it');
          await this.opts.outbox.remove(entries);
          continue;
        }
        if (!this.running) break;
        const cap = this.opts.backoffCapMs ?? BACKOFF_CAP_MS;
        const delay = Math.random() * Math.min(cap, (this.opts.backoffBaseMs ?? BACKOFF_BASE_MS) * 2 ** attempt);
        attempt = Math.min(attempt + 1, 30);
        this.log.warn({ err: e, retry_in_ms: Math.round(delay) }, 'shipping capture batch failed');
        await this.sleep(delay);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() { clearTimeout(timer); resolve(); }
      this.wake = () => { this.wake = null; done(); };
    });
  }

  private ensureStream(): IngestClientCall {
    if (this.call) return this.call;
    const call = this.opts.openStream();
    call.on('data', (ack: IngestAckIn) => {
      const p = this.pending;
      if (p && ack.batch_id === p.batchId) { this.pending = null; p.resolve(); }
    });
    const broken = (err: Error) => {
      if (this.call !== call) return;
      this.call = null;
      const p = this.pending;
      this.pending = null;
      p?.reject(err);
    };
    call.on('error', (err: grpc.ServiceError) => {
      broken(err.code === grpc.status.INVALID_ARGUMENT ? new PoisonBatch(err.details) : err);
    });
    call.on('end', () => broken(new Error('ingest stream ended')));
    this.call = call;
    return call;
  }

  private dropStream(err: Error): void {
    const call = this.call;
    this.call = null;
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
    call?.cancel();
  }

  private ship(id: string, events: Buffer): Promise<void> {
    const call = this.ensureStream();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.dropStream(new Error(`no ack for batch ${id} within ${this.opts.ackTimeoutMs ?? ACK_TIMEOUT_MS} ms`)),
        this.opts.ackTimeoutMs ?? ACK_TIMEOUT_MS);
      this.pending = {
        batchId: id,
        resolve: () => { clearTimeout(timer); resolve(); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      };
      call.write({ batch_id: id, events });
    });
  }
}

/**
 * The batches shipping `entries` takes: one, unless a lone entry is over {@link MAX_BATCH_BYTES}
 * (peek returns a first entry whatever its size); then its events split into parts of at most
 * that size (an event larger than that alone forms its own part), with ids `<batch id>.<part>`.
 */
function batches(entries: readonly OutboxEntry[]): { id: string; events: Buffer }[] {
  const id = batchId(entries);
  if (entries.length !== 1 || entries[0]!.bytes <= MAX_BATCH_BYTES) return [{ id, events: packr.pack(entries.flatMap((e) => e.events)) }];
  const parts: { id: string; events: Buffer }[] = [];
  let part: unknown[] = [];
  let size = 0;
  const flush = () => {
    parts.push({ id: `${id}.${parts.length}`, events: packr.pack(part) });
    part = [];
    size = 0;
  };
  for (const e of entries[0]!.events) {
    const bytes = packr.pack(e).length;
    if (part.length > 0 && size + bytes > MAX_BATCH_BYTES) flush();
    part.push(e);
    size += bytes;
  }
  if (part.length > 0) flush();
  return parts;
}

/** Batch id: the first and last outbox keys (unique while the entries exist). */
function batchId(entries: readonly OutboxEntry[]): string {
  return `${entries[0]!.key}-${entries[entries.length - 1]!.key}`;
}
