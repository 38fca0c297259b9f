/**
 * How the Watch client (client.ts) writes what a stream delivers into the node's store without
 * letting one bad change stall the feed behind it: a batch is written in one transaction when
 * every change applies, else change by change, and a change that cannot be decoded or written is
 * skipped, logged at error level with its revision, kind, entity and project, and counted in the
 * sync state (`skippedChanges`, `lastSkippedRevision`; `/metrics`). A failure that is the store's,
 * not a change's, is thrown so the stream ends.
 */
import type { Logger } from '../../log.js';
import { parseRevision, type ChangeMessage } from '../../contract/messages.js';
import { StoreStateError, type StoreChange, type WritableNodeStore } from '../store/lmdb.js';
import { toStoreChange } from './decode.js';
import type { SyncState } from './state.js';

/** Writes tail batches and snapshot chunks into one store (see the module doc). */
export interface ChangeApplier {
  /**
   * Writes one tail batch (revisions ascending, all above the store's) and sets `revision`:
   * one transaction when every change applies, else one per change, skipping those that fail.
   * @throws when even a bare revision cannot be written (the store, not a change, is failing).
   */
  applyTail(changes: readonly ChangeMessage[], revision: number): Promise<void>;
  /**
   * Stages snapshot entities (and `cursor`, when they are a chunk), skipping (and reporting)
   * those that cannot be decoded or written.
   * @throws StoreStateError, or when not one entity of several could be written.
   */
  stageIsolated(changes: readonly ChangeMessage[], cursor?: Uint8Array): Promise<void>;
}

/** The applier of `store`, counting skipped changes in `st` and logging them on `log`. */
export function changeApplier(store: WritableNodeStore, st: SyncState, log: Logger): ChangeApplier {
  const skip = (c: ChangeMessage, err: unknown): void => {
    st.skippedChanges++;
    let revision = 0;
    try { revision = parseRevision(c.revision); } catch { /* reported as 0 */ }
    if (revision > st.lastSkippedRevision) st.lastSkippedRevision = revision;
    log.error({ err, revision, kind: c.kind, entity_id: c.entity_id.slice(0, 200), project_id: c.project_id, op: c.op },
      'change cannot be applied; skipped');
  };
  /** Each change with its decoded form; those whose payload cannot be decoded are skipped. */
  const decodeAll = (changes: readonly ChangeMessage[]): [ChangeMessage, StoreChange][] => {
    const decoded: [ChangeMessage, StoreChange][] = [];
    for (const c of changes) {
      try { decoded.push([c, toStoreChange(c)]); } catch (err) { skip(c, err); }
    }
    return decoded;
  };
  return {
    async applyTail(changes, revision) {
      const decoded = decodeAll(changes);
      try {
        await store.applyBatch(decoded.map((d) => d[1]), revision);
        return;
      } catch (err) {
        log.warn({ err, revision, changes: decoded.length }, 'batch failed; applying its changes one by one');
      }
      for (const [c, sc] of decoded) {
        const rev = parseRevision(c.revision);
        try { await store.applyBatch([sc], rev); } catch (err) {
          await store.applyBatch([], rev); // throws when the store itself cannot write
          skip(c, err);
        }
      }
      if (store.revision() < revision) await store.applyBatch([], revision);
    },
    async stageIsolated(changes, cursor) {
      const decoded = decodeAll(changes);
      try {
        await store.stageSnapshot(decoded.map((d) => d[1]), cursor);
        return;
      } catch (err) {
        // The store, not these entities, failed (an earlier chunk's commit): end the stream.
        if (err instanceof StoreStateError) throw err;
        log.warn({ err, changes: decoded.length }, 'snapshot chunk failed; staging its entities one by one');
      }
      let failed = 0;
      for (const [c, sc] of decoded) {
        try { await store.stageSnapshot([sc]); } catch (err) { skip(c, err); failed++; }
      }
      // Not one entity could be written: the store is failing, not the entities.
      if (failed === decoded.length && failed > 1) throw new Error('snapshot staging fails for every entity');
      if (cursor !== undefined) await store.stageSnapshot([], cursor);
    },
  };
}
