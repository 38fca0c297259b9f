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
 */
import fs from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import { prepareLmdbDir, restrictLmdbFiles } from '../store/files.js';
import { Packr } from 'msgpackr';
import type { CapturedEvent } from '../../control-plane/ingestion/types.js';

/** Thrown by {@link Outbox.append} when the outbox is at its size bound. */
export class OutboxFullError extends Error {
  constructor(readonly maxBytes: number) {
    super(`capture outbox is full (${maxBytes} bytes); retry later`);
    this.name = 'OutboxFullError';
  }
}

/** One stored entry as handed to the shipper. */
export interface OutboxEntry { key: number; events: CapturedEvent[]; bytes: number }

/** Plain msgpack (no records), the same bytes any decoder reads. */
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** The outbox. */
export class Outbox {
  private nextKey: number;
  private storedBytes = 0;
  private storedEntries = 0;
  private readonly ownsRoot: boolean;

  private constructor(private readonly root: RootDatabase, private readonly db: Database<Buffer, number>, ownsRoot: boolean,
    readonly maxBytes: number) {
    this.ownsRoot = ownsRoot;
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
   * (`root`, e.g. the node store's) as the named database `capture_outbox`.
   */
  static open(opts: { path?: string; root?: RootDatabase; maxBytes: number }): Outbox {
    if (!opts.root && !opts.path) throw new Error('Outbox.open needs a path or a root database');
    if (!opts.root) prepareLmdbDir(opts.path!);
    // The map reserved up front (one mapping): twice the payload bound covers LMDB's page overhead.
    const root = opts.root ?? open({ path: opts.path!, mapSize: Math.max(64 * 1024 ** 2, 2 * opts.maxBytes + 64 * 1024 ** 2) });
    if (!opts.root) restrictLmdbFiles(opts.path!);
    const db = root.openDB<Buffer, number>({ name: 'capture_outbox', encoding: 'binary' });
    return new Outbox(root, db, !opts.root, opts.maxBytes);
  }

  /** The environment's size on disk and its map size, in bytes (/metrics). */
  storage(): { fileBytes: number; mapBytes: number } {
    const file = (this.root as unknown as { path?: string }).path;
    let fileBytes = 0;
    try { fileBytes = file ? fs.statSync(`${file}/data.mdb`).size : 0; } catch { fileBytes = 0; }
    return { fileBytes, mapBytes: Number((this.root.getStats() as { mapSize?: number }).mapSize ?? 0) };
  }

  /** Bytes of stored payloads. */
  get bytes(): number { return this.storedBytes; }
  /** Number of stored entries (requests). */
  get entries(): number { return this.storedEntries; }

  /**
   * Stores one request's events durably. Resolves after commit and flush to disk.
   * @throws OutboxFullError when the outbox would exceed `maxBytes`.
   */
  async append(events: CapturedEvent[]): Promise<void> {
    return this.appendPacked(Outbox.pack(events));
  }

  /** The stored form of one request's events (msgpack), e.g. built on an IO thread and transferred. */
  static pack(events: CapturedEvent[]): Uint8Array {
    return packr.pack(events);
  }

  /** {@link append} of events already in their stored form ({@link Outbox.pack}). @throws OutboxFullError. */
  async appendPacked(packed: Uint8Array): Promise<void> {
    const value = Buffer.isBuffer(packed) ? packed : Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
    if (this.storedBytes + value.length > this.maxBytes) throw new OutboxFullError(this.maxBytes);
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
    const out: OutboxEntry[] = [];
    let total = 0;
    for (const { key, value } of this.db.getRange({ limit: maxEntries })) {
      if (out.length > 0 && total + value.length > maxBytes) break;
      total += value.length;
      out.push({ key, events: packr.unpack(value) as CapturedEvent[], bytes: value.length });
    }
    return out;
  }

  /** Deletes acknowledged entries in one transaction. */
  async remove(entries: readonly OutboxEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.db.transaction(() => {
      for (const e of entries) this.db.remove(e.key);
    });
    for (const e of entries) {
      this.storedBytes -= e.bytes;
      this.storedEntries--;
    }
  }

  /** Closes the environment when the outbox opened it. */
  async close(): Promise<void> {
    if (this.ownsRoot) await this.root.close();
  }
}
