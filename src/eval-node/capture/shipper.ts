/**
 * Ships the capture outbox to the control plane over gRPC `Ingest` (bidi stream of
 * `IngestBatch{batch_id, events: msgpack array}` → `IngestAck{batch_id}`), deleting entries only
 * after their batch is acknowledged (the control plane acks after commit). Delivery is at least
 * once: a batch whose ack was lost is sent again and deduplicated by event uuid upstream.
 *
 * Up to {@link MAX_IN_FLIGHT} batches are in flight on the one stream, oldest entries first, each
 * up to {@link MAX_BATCH_ENTRIES} entries and {@link MAX_BATCH_BYTES} of payload: the node reads
 * and sends the next batches while the control plane ingests one. The control plane ingests the
 * batches of a stream one at a time, in the order sent, and acks them in that order
 * (control-plane/grpc/ingest.ts), so per distinct id events are ingested in capture order; the
 * shipper removes a batch's entries only once it and every earlier batch are acknowledged. A
 * batch is the entries' stored msgpack spliced together (batch-bytes.ts), not decoded and
 * encoded again. An entry larger than the byte bound on its own (one big capture request) is
 * shipped alone, with nothing else in flight, as several batches of its events, each
 * acknowledged before the next, and removed after the last: one gRPC message must stay under
 * the server's 4 MiB limit, or the batch would fail with RESOURCE_EXHAUSTED forever and hold up
 * every later event.
 * The stream stays open between batches.
 * On a stream error or an ack timeout (of the oldest batch in flight) the stream is dropped,
 * every unacknowledged batch is forgotten, and after a capped, jittered exponential backoff the
 * shipper starts again from the oldest entry (the control plane drops what it already stored by
 * event uuid). A batch refused with INVALID_ARGUMENT can never succeed, so it is dropped (logged)
 * rather than wedging the outbox: it is the oldest one in flight, since the control plane acks
 * every earlier batch before it reads a later one.
 *
 * Wiring (eval-node): `new Shipper({ outbox, log, openStream: () => client.Ingest(clusterTokenMetadata(token)) })`,
 * `start()`, call `notify()` after each accepted request, `stop()` on shutdown.
 */
import * as grpc from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import type { Logger } from '../../log.js';
import { Outbox, type PackedOutboxEntry } from './outbox.js';
import { concatMsgpackArrays } from './batch-bytes.js';

/** Largest number of outbox entries (requests) per batch. */
export const MAX_BATCH_ENTRIES = 500;
/** Batches sent and not yet acknowledged, at most. */
export const MAX_IN_FLIGHT = 3;
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
  /**
   * False from a stream break until the run loop has forgotten the batches in flight: nothing
   * is sent meanwhile, so no later batch can reach the control plane before an earlier one is
   * sent again.
   */
  private healthy = true;
  /** Batches sent and not yet acknowledged, by batch id. */
  private readonly pending = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
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
    /** Batches in flight, oldest first: their entries and their acknowledgement. */
    let window: { entries: PackedOutboxEntry[]; acked: Promise<void> }[] = [];
    while (this.running) {
      try {
        while (window.length < MAX_IN_FLIGHT) {
          const after = window.length > 0 ? window[window.length - 1]!.entries.at(-1)!.key : undefined;
          const entries = this.opts.outbox.peekPacked(MAX_BATCH_ENTRIES, MAX_BATCH_BYTES, after);
          if (entries.length === 0) break;
          if (entries.length === 1 && entries[0]!.bytes > MAX_BATCH_BYTES) {
            if (window.length > 0) break; // shipped alone, once the window is empty
            for (const part of oversizedParts(entries[0]!)) await this.withAckTimeout(this.ship(part.id, part.events), part.id);
            window.push({ entries, acked: Promise.resolve() });
            break;
          }
          const acked = this.ship(batchId(entries), batchBytes(entries));
          acked.catch(() => {}); // awaited below once oldest; a dropped stream rejects them all
          window.push({ entries, acked });
        }
        if (window.length === 0) {
          await this.sleep(this.opts.idlePollMs ?? IDLE_POLL_MS);
          continue;
        }
        const oldest = window[0]!;
        await this.withAckTimeout(oldest.acked, batchId(oldest.entries));
        await this.opts.outbox.remove(oldest.entries);
        window.shift();
        this.shippedBatches++;
        attempt = 0;
      } catch (e) {
        const refused = window[0];
        window = [];
        this.dropStream(e instanceof Error ? e : new Error(String(e)));
        this.healthy = true;
        if (e instanceof PoisonBatch) {
          if (refused) {
            this.log.error({ batch_id: batchId(refused.entries), entries: refused.entries.length }, 'control plane refused a batch; dropping it');
            await this.opts.outbox.remove(refused.entries);
          }
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

  /** Waits for `acked`; past the ack timeout the stream is dropped (rejecting it). */
  private async withAckTimeout(acked: Promise<void>, id: string): Promise<void> {
    const ms = this.opts.ackTimeoutMs ?? ACK_TIMEOUT_MS;
    const timer = setTimeout(() => this.dropStream(new Error(`no ack for batch ${id} within ${ms} ms`)), ms);
    try { await acked; } finally { clearTimeout(timer); }
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
      const p = this.pending.get(ack.batch_id);
      if (p) { this.pending.delete(ack.batch_id); p.resolve(); }
    });
    const broken = (err: Error) => {
      if (this.call !== call) return;
      this.call = null;
      this.healthy = false;
      this.rejectPending(err);
    };
    call.on('error', (err: grpc.ServiceError) => {
      broken(err.code === grpc.status.INVALID_ARGUMENT ? new PoisonBatch(err.details) : err);
    });
    call.on('end', () => broken(new Error('ingest stream ended')));
    this.call = call;
    return call;
  }

  /** Rejects every batch awaiting its ack with `err`. */
  private rejectPending(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }

  private dropStream(err: Error): void {
    const call = this.call;
    this.call = null;
    this.healthy = false;
    this.rejectPending(err);
    call?.cancel();
  }

  /** Sends one batch; resolves when it is acknowledged, rejects when the stream breaks first. */
  private ship(id: string, events: Buffer): Promise<void> {
    if (!this.healthy) throw new Error('ingest stream broke with batches in flight');
    const call = this.ensureStream();
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      call.write({ batch_id: id, events });
    });
  }
}

/** A batch of `entries`: their events as one msgpack array (spliced; re-encoded when an entry is not an array). */
function batchBytes(entries: readonly PackedOutboxEntry[]): Buffer {
  return concatMsgpackArrays(entries.map((e) => e.packed)) ?? packr.pack(entries.flatMap((e) => Outbox.unpack(e.packed)));
}

/**
 * The batches shipping one `entry` larger than {@link MAX_BATCH_BYTES}: its events split into
 * parts of at most that size (an event larger than that alone forms its own part), with ids
 * `<batch id>.<part>`.
 */
function oversizedParts(entry: PackedOutboxEntry): { id: string; events: Buffer }[] {
  const id = batchId([entry]);
  const parts: { id: string; events: Buffer }[] = [];
  let part: unknown[] = [];
  let size = 0;
  const flush = () => {
    parts.push({ id: `${id}.${parts.length}`, events: packr.pack(part) });
    part = [];
    size = 0;
  };
  for (const e of Outbox.unpack(entry.packed)) {
    const bytes = packr.pack(e).length;
    if (part.length > 0 && size + bytes > MAX_BATCH_BYTES) flush();
    part.push(e);
    size += bytes;
  }
  if (part.length > 0) flush();
  return parts;
}

/** Batch id: the first and last outbox keys (unique while the entries exist). */
function batchId(entries: readonly { key: number }[]): string {
  return `${entries[0]!.key}-${entries[entries.length - 1]!.key}`;
}
