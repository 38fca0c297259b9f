/**
 * Opening a node's store so that a damaged or outdated one never stops the node (issue 8 item
 * 6; DESIGN.md "Evaluation node": LMDB is a cache of the control plane). Order: the meta-page
 * check and the child-process probe (integrity.ts); on failure the directory is moved aside
 * and a fresh store is created, which the Watch client fills from a snapshot. A store of
 * another layout version (contract/store-format.ts) is moved aside the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../log.js';
import { checkLmdbHeader, moveStoreAside, probeStore } from './integrity.js';
import { openNodeStore, StoreStateError, type WritableNodeStore } from './lmdb.js';

/**
 * Opens (creating when needed) the writable store at `dir`, after checking an existing one.
 * Logs at error level, with the reason and where the old store went, whenever it moves one.
 * `probe: false` skips the child-process read of every page (a file that was just installed
 * and checked: sync/image.ts); the meta-page check still runs.
 * @throws when a fresh store cannot be created either (permissions, disk).
 */
export async function openCheckedStore(dir: string, log: Logger, mapSize?: number, opts: { probe?: boolean } = {}): Promise<WritableNodeStore> {
  const exists = fs.existsSync(path.join(dir, 'data.mdb'));
  const reason = exists ? (checkLmdbHeader(dir) ?? (opts.probe === false ? null : await probeStore(dir))) : null;
  if (reason !== null) {
    const aside = moveStoreAside(dir);
    log.error({ path: dir, moved_to: aside, reason }, 'node store is damaged; moved it aside and rebuilding from the control plane');
  }
  try {
    return openNodeStore(dir, { mapSize });
  } catch (e) {
    if (!(e instanceof StoreStateError)) throw e;
    const aside = moveStoreAside(dir);
    log.warn({ path: dir, moved_to: aside, reason: e.message }, 'node store has another layout; moved it aside and rebuilding from the control plane');
    return openNodeStore(dir, { mapSize });
  }
}
