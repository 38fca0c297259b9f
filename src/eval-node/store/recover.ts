/**
 * Opening a node's store so that a damaged or outdated one never stops the node (DESIGN.md "Evaluation node": LMDB is a cache of the control plane). Order: the meta-page
 * check and the child-process probe (integrity.ts); on failure the directory is moved aside
 * and a fresh store is created, which the Watch client fills from a snapshot. A store of
 * another layout version (contract/store-format.ts) is moved aside the same way. Copies moved
 * aside are pruned to the newest `keepMovedAside` (aside.ts); the store's copies hold nothing
 * to recover, so any beyond the bound goes.
 */
import type { Logger } from '../../log.js';
import { moveAside, pruneAside } from './aside.js';
import { checkEnvironment } from './integrity.js';
import { openNodeStore, StoreStateError, type WritableNodeStore } from './lmdb.js';

/** Options of {@link openCheckedStore}. */
export interface CheckedStoreOptions {
  /**
   * false skips the child-process read of every page (a file that was just installed and
   * checked: sync/image.ts); the meta-page check still runs.
   */
  probe?: boolean;
  /** Copies moved aside to keep (config.keepMovedAside); undefined keeps every copy. */
  keepMovedAside?: number;
  /** Called once per store moved aside (metrics). */
  onMovedAside?(reason: string): void;
}

/**
 * Opens (creating when needed) the writable store at `dir`, after checking an existing one.
 * Logs at error level, with the reason and where the old store went, whenever it moves one,
 * and at warn level each old copy it prunes.
 * @throws when a fresh store cannot be created either (permissions, disk).
 */
export async function openCheckedStore(dir: string, log: Logger, mapSize?: number, opts: CheckedStoreOptions = {}): Promise<WritableNodeStore> {
  const reason = await checkEnvironment(dir, opts.probe !== false);
  if (reason !== null) {
    const aside = moveAside(dir);
    opts.onMovedAside?.(reason);
    log.error({ path: dir, moved_to: aside, reason }, 'node store is damaged; moved it aside and rebuilding from the control plane');
  }
  let store: WritableNodeStore;
  try {
    store = openNodeStore(dir, { mapSize });
  } catch (e) {
    if (!(e instanceof StoreStateError)) throw e;
    const aside = moveAside(dir);
    log.warn({ path: dir, moved_to: aside, reason: e.message }, 'node store has another layout; moved it aside and rebuilding from the control plane');
    store = openNodeStore(dir, { mapSize });
  }
  if (opts.keepMovedAside !== undefined) {
    for (const gone of pruneAside(dir, opts.keepMovedAside)) log.warn({ path: gone, keep: opts.keepMovedAside }, 'deleted an old node store copy moved aside after damage');
  }
  return store;
}
