/**
 * The control plane's snapshot image (issue 17 item 2; proto/switchyard.proto `SnapshotImage`):
 * a complete node store that the control plane keeps current beside Postgres, so that a node
 * with no store copies one file instead of receiving every entity through a Watch snapshot.
 *
 * The image IS a node store, kept by the node's own code: the evaluation node's LMDB store
 * (eval-node/store) fed by the node's Watch client (eval-node/sync/client.ts) over this control
 * plane's gRPC port, as one more watching node. So its layout, its snapshot and tail handling,
 * and its revision bookkeeping are exactly a node's, and a node that installs a copy simply
 * resumes watching from the copy's revision. Copies are LMDB's consistent environment copy
 * (`mdb_env_copy`, file-speed), taken between two of the image's writes.
 *
 * Cost: the control plane applies every change once more (as one node) and holds a node-sized
 * LMDB file under `<dataDir>/snapshot-image` (~540 B per person, bench/scale.ts).
 */
import fs from 'node:fs';
import type { Logger } from '../../log.js';
import { openCheckedStore } from '../../eval-node/store/recover.js';
import type { WritableNodeStore } from '../../eval-node/store/lmdb.js';
import { startWatchClient, type WatchClient } from '../../eval-node/sync/client.js';

/** Node id the image's Watch stream carries (control-plane logs and metrics). */
export const IMAGE_NODE_ID = 'control-plane-snapshot-image';

/** A running image. */
export interface ImageReplica {
  /** True once the image holds a complete snapshot (copies are served from then on). */
  ready(): boolean;
  /** The image's revision. */
  revision(): number;
  /**
   * Copies the image into `dir` (an empty directory) as `data.mdb`.
   * @returns the copy's revision and size in bytes. @throws when LMDB cannot write the copy.
   */
  copy(dir: string): Promise<{ revision: number; bytes: number }>;
  /** Stops watching and closes the store. */
  close(): Promise<void>;
}

/** Options of {@link startImageReplica}. */
export interface ImageReplicaOptions {
  /** The image's LMDB directory. */
  dir: string;
  /** This control plane's gRPC address as a node reaches it (`host:port`). */
  controlPlane: string;
  clusterToken: string;
  /** LMDB map size in bytes (config.lmdbMapSize). */
  mapSize: number;
  log: Logger;
}

/**
 * Opens (or creates) the image store and starts keeping it current; resolves once the store is
 * open, before it is complete. @throws when the store cannot be opened.
 */
export async function startImageReplica(o: ImageReplicaOptions): Promise<ImageReplica> {
  const log = o.log.child({ component: 'snapshot-image' });
  const store: WritableNodeStore = await openCheckedStore(o.dir, log, o.mapSize);
  const sync: WatchClient = startWatchClient(store, { controlPlane: o.controlPlane, clusterToken: o.clusterToken, nodeId: IMAGE_NODE_ID }, log);
  let closing: Promise<void> | null = null;
  return {
    ready: () => store.hasCompleteSnapshot(),
    revision: () => store.revision(),
    async copy(dir) {
      const { revision } = await store.copyTo(dir);
      return { revision, bytes: fs.statSync(`${dir}/data.mdb`).size };
    },
    close() {
      closing ??= (async () => {
        await sync.close();
        await store.close();
      })();
      return closing;
    },
  };
}
