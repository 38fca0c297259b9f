/**
 * The node's durable capture outbox (DESIGN.md "Evaluation node": an accepted event is in LMDB
 * before the client gets 200, and leaves only when the control plane acknowledged its batch).
 *
 * Layout: one LMDB database `capture_outbox`; key = a strictly increasing integer sequence
 * (ordered-binary numbers sort numerically), value = msgpack of one request's event array, stored
 * as raw bytes. {@link Outbox.append} resolves only after the write is committed AND flushed to
 * disk. {@link Outbox.peek} hands the oldest entries to the shipper; {@link Outbox.remove}
 * deletes them once acknowledged.
 *
 * Bound: the sum of stored value sizes is tracked in memory (recomputed by one scan on open) and
 * `append` refuses with {@link OutboxFullError} when it would pass `maxBytes`, so a node cut off
 * from the control plane answers 503 instead of filling its disk. The figure counts payload
 * bytes only, not LMDB page overhead.
 *
 * Slowing down before refusing: past {@link SHED_FROM_FRACTION} of the bound,
 * an append made for a client request (`shed: true`) is refused with probability rising linearly
 * to 1 at the bound, as a backlog refusal that carries a `Retry-After` growing from
 * {@link RETRY_AFTER_MIN_S} to {@link RETRY_AFTER_MAX_S} seconds; SDKs back off and resend, so the
 * backlog drains instead of the node flipping from "everything accepted" to "everything refused".
 * The node's own records (continuity) are not shed.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { MAX_OUTBOX_BYTES } from '../../limits.js';
import { prepareLmdbDir, restrictLmdbFiles } from '../store/files.js';
import { markCleanClose } from '../store/clean-close.js';
import { environmentFigures, type EnvironmentFigures } from '../store/figures.js';
import { Packr } from 'msgpackr';
import type { CapturedEvent } from '../../contract/events.js';


/** Fill (fraction of `maxBytes`) from which client appends are shed (module doc). */
export const SHED_FROM_FRACTION = 0.8;
/** `Retry-After` of a refusal at {@link SHED_FROM_FRACTION}, in seconds. */
export const RETRY_AFTER_MIN_S = 1;
/** `Retry-After` of a refusal at the bound, in seconds. */
export const RETRY_AFTER_MAX_S = 30;

/**
 * Thrown by {@link Outbox.append} when the outbox is at its size bound, or (`backlog` true) when
 * a client append is shed near it. `retryAfterS`: what the client should wait, in seconds.
 */
export class OutboxFullError extends Error {
  /**
   * @param backlog the outbox is over its shedding threshold (not full).
   * @param stopping the node is stopping: the outbox takes no more appends (another node will).
   */
  constructor(readonly maxBytes: number, readonly retryAfterS: number = RETRY_AFTER_MAX_S, readonly backlog: boolean = false, readonly stopping: boolean = false) {
    super(stopping
      ? 'this node is stopping and takes no more events; retry (another node will take them)'
      : backlog
        ? `capture outbox is backlogged (over ${Math.round(SHED_FROM_FRACTION * 100)}% of ${maxBytes} bytes); retry after ${retryAfterS} s`
        : `capture outbox is full (${maxBytes} bytes); retry later`);
    this.name = 'OutboxFullError';
  }
}

/**
 * Decides whether a client append is shed at `fill` (fraction of the bound, 0..1+) given a
 * uniform draw `u` in [0, 1): the Retry-After in seconds when shed, else null (module doc).
 */
export function shedRetryAfter(fill: number, u: number): number | null {
  if (fill < SHED_FROM_FRACTION) return null;
  const over = Math.min(1, (fill - SHED_FROM_FRACTION) / (1 - SHED_FROM_FRACTION));
  if (u >= over) return null;
  return Math.ceil(RETRY_AFTER_MIN_S + (RETRY_AFTER_MAX_S - RETRY_AFTER_MIN_S) * over);
}

/** One stored entry as handed to the shipper. */
export interface OutboxEntry { key: number; events: CapturedEvent[]; bytes: number }
/** An outbox entry as stored: `packed` is the msgpack array of its events ({@link Outbox.pack}). */
export interface PackedOutboxEntry { key: number; packed: Buffer; bytes: number }

/** Plain msgpack (no records), the same bytes any decoder reads. */
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** The outbox. */
export class Outbox {
  private nextKey: number;
  private storedBytes = 0;
  private storedEntries = 0;

  /** `path`: the environment's directory when the outbox opened it (and so closes it), else null. */
  private constructor(private readonly root: RootDatabase, private readonly db: Database<Buffer, number>, private readonly path: string | null,
    readonly maxBytes: number, private readonly random: () => number) {
    let last = 0;
    for (const { key, value } of db.getRange({})) {
      this.storedBytes += value.length;
      this.storedEntries++;
      last = key;
    }
    this.nextKey = last + 1;
  }

  /**
   * Opens the outbox in its own LMDB environment at `path`, or inside an existing environment
   * (`root`, e.g. the node store's) as the named database `capture_outbox`. `random` (tests)
   * replaces Math.random for shedding.
   */
  static open(opts: { path?: string; root?: RootDatabase; maxBytes: number; random?: () => number }): Outbox {
    if (!opts.root && !opts.path) throw new Error('Outbox.open needs a path or a root database');
    if (!(opts.maxBytes > 0 && opts.maxBytes <= MAX_OUTBOX_BYTES)) {
      // LMDB maps twice the bound up front; a map past the address space crashed the process.
      throw new RangeError(`the capture outbox bound must be between 1 and ${MAX_OUTBOX_BYTES} bytes (got ${opts.maxBytes})`);
    }
    if (!opts.root) prepareLmdbDir(opts.path!);
    // The map reserved up front (one mapping): twice the payload bound covers LMDB's page overhead.
    const root = opts.root ?? open({ path: opts.path!, mapSize: Math.max(64 * 1024 ** 2, 2 * opts.maxBytes + 64 * 1024 ** 2) });
    if (!opts.root) restrictLmdbFiles(opts.path!);
    const db = root.openDB<Buffer, number>({ name: 'capture_outbox', encoding: 'binary' });
    return new Outbox(root, db, opts.root ? null : opts.path!, opts.maxBytes, opts.random ?? Math.random);
  }

  /** The environment's size on disk, its map size and its resident pages, in bytes (/metrics). */
  storage(): EnvironmentFigures {
    const dir = (this.root as unknown as { path?: string }).path;
    return dir ? environmentFigures(dir, this.root) : { fileBytes: 0, mapBytes: 0, residentBytes: 0 };
  }

  /** Bytes of stored payloads. */
  get bytes(): number { return this.storedBytes; }
  /** Number of stored entries (requests). */
  get entries(): number { return this.storedEntries; }
  /** Stored payload as a fraction of the bound (1 = full). */
  get fill(): number { return this.storedBytes / this.maxBytes; }
  /** Client appends shed near the bound since open (metrics). */
  shedCount = 0;

  /**
   * Stores one request's events durably. Resolves after commit and flush to disk. `shed`: the
   * events come from a client request, which may be refused near the bound (module doc).
   * @throws OutboxFullError when the outbox would exceed `maxBytes`, or when shed.
   */
  async append(events: CapturedEvent[], shed = false): Promise<void> {
    return this.appendPacked(Outbox.pack(events), shed);
  }

  /** The stored form of one request's events (msgpack), e.g. built on an IO thread and transferred. */
  static pack(events: CapturedEvent[]): Uint8Array {
    return packr.pack(events);
  }

  /** {@link append} of events already in their stored form ({@link Outbox.pack}). @throws OutboxFullError. */
  async appendPacked(packed: Uint8Array, shed = false): Promise<void> {
    const value = Buffer.isBuffer(packed) ? packed : Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
    if (this.storedBytes + value.length > this.maxBytes) throw new OutboxFullError(this.maxBytes);
    if (shed) {
      const retryAfterS = shedRetryAfter(this.fill, this.random());
      if (retryAfterS !== null) {
        this.shedCount++;
        throw new OutboxFullError(this.maxBytes, retryAfterS, true);
      }
    }
    const key = this.nextKey++;
    this.storedBytes += value.length; // reserved now so concurrent appends respect the bound
    this.storedEntries++;
    try {
      await this.db.put(key, value);
      await this.db.flushed;
    } catch (e) {
      this.storedBytes -= value.length;
      this.storedEntries--;
      throw e;
    }
  }

  /** The oldest entries, up to `maxEntries` and (after the first) `maxBytes` of payload. */
  peek(maxEntries: number, maxBytes = Number.POSITIVE_INFINITY): OutboxEntry[] {
    return this.peekPacked(maxEntries, maxBytes).map((e) => ({ key: e.key, events: packr.unpack(e.packed) as CapturedEvent[], bytes: e.bytes }));
  }

  /**
   * {@link peek} without decoding: each entry's stored msgpack (a copy), oldest first, from the
   * first key above `after` (every key when omitted). The shipper splices these into a batch.
   */
  peekPacked(maxEntries: number, maxBytes = Number.POSITIVE_INFINITY, after?: number): PackedOutboxEntry[] {
    const out: PackedOutboxEntry[] = [];
    let total = 0;
    for (const { key, value } of this.db.getRange({ limit: maxEntries, ...(after === undefined ? {} : { start: after + 1 }) })) {
      if (out.length > 0 && total + value.length > maxBytes) break;
      total += value.length;
      out.push({ key, packed: Buffer.from(value), bytes: value.length });
    }
    return out;
  }

  /** Unpacks an entry's stored form ({@link peekPacked}) into its events. */
  static unpack(packed: Uint8Array): CapturedEvent[] {
    return packr.unpack(packed) as CapturedEvent[];
  }

  /** Deletes acknowledged entries in one transaction. */
  async remove(entries: readonly { key: number; bytes: number }[]): Promise<void> {
    if (entries.length === 0) return;
    await this.db.transaction(() => {
      for (const e of entries) this.db.remove(e.key);
    });
    for (const e of entries) {
      this.storedBytes -= e.bytes;
      this.storedEntries--;
    }
  }

  /** Closes the environment when the outbox opened it, recording the clean close (clean-close.ts). */
  async close(): Promise<void> {
    if (this.path === null) return;
    await this.root.close();
    await markCleanClose(this.path);
  }
}
