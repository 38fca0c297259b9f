/**
 * The node store's `meta` database (store/lmdb.ts): the one state record every read resolves
 * first, the record of a snapshot being staged, and the layout version. Each record is written
 * in the same transaction as the data it describes.
 */
import type { Database } from 'lmdb';

/** The state record. */
export interface MetaState {
  /** Active generation (key prefix of the live state). */
  gen: number;
  /** Last applied revision. */
  revision: number;
  /** A complete snapshot has been swapped in at least once. */
  complete: boolean;
  /** Bumped by every write that changes a project, organization or personal API key (cache key). */
  tenancy: number;
}

/** A snapshot being staged: its generation, begin revision and the cursor of its last chunk (null before one). */
export interface StagingRecord { gen: number; revision: number; cursor: Uint8Array | null }

/** The state of an empty store. */
export const EMPTY_STATE: MetaState = Object.freeze({ gen: 0, revision: 0, complete: false, tenancy: 0 });

const STATE = 'state';
const STAGING = 'staging';
const FORMAT = 'format';

/** Typed access to the records of `meta` (msgpack-encoded, string keys). */
export class MetaRecords {
  constructor(private readonly meta: Database<unknown, string>) {}

  /** The state record ({@link EMPTY_STATE} when none). Stored as a tuple: a 4-field object costs ~2.5× more to decode per get. */
  state(): MetaState {
    const t = this.meta.get(STATE) as [number, number, boolean, number] | undefined;
    return t === undefined ? EMPTY_STATE : { gen: t[0], revision: t[1], complete: t[2], tenancy: t[3] };
  }

  /** Writes the state record inside the current write transaction. */
  putState(next: MetaState): void {
    this.meta.putSync(STATE, [next.gen, next.revision, next.complete, next.tenancy]);
  }

  /** The staging record, if any. */
  staging(): StagingRecord | undefined {
    const t = this.meta.get(STAGING) as [number, number, Uint8Array | null] | undefined;
    return t === undefined ? undefined : { gen: t[0], revision: t[1], cursor: t[2] };
  }

  /** Writes the staging record inside the current write transaction. */
  putStaging(r: StagingRecord): void {
    this.meta.putSync(STAGING, [r.gen, r.revision, r.cursor]);
  }

  /** Queues the staging record as an lmdb-js `put` (committed in order with puts queued before it). */
  queueStaging(r: StagingRecord): Promise<boolean> {
    return this.meta.put(STAGING, [r.gen, r.revision, r.cursor]);
  }

  /** Removes the staging record inside the current write transaction. */
  removeStaging(): void {
    this.meta.removeSync(STAGING);
  }

  /** The layout version written when the store was created, if any. */
  format(): unknown {
    return this.meta.get(FORMAT);
  }

  /** Records the layout version (its own transaction). */
  putFormat(version: number): void {
    this.meta.putSync(FORMAT, version);
  }
}
