/**
 * The control plane's snapshot image (issue 17 item 2; proto/switchyard.proto `SnapshotImage`):
 * a complete node store that the control plane keeps current beside Postgres, so that a node
 * with no store copies one file instead of receiving every entity through a Watch snapshot.
 *
 * The image IS a node store, kept by the node's own code: the evaluation node's LMDB store
 * (eval-node/store) fed by the node's Watch client (eval-node/sync/client.ts) over this control
 * plane's gRPC port, as one more watching node, in a thread of its own (replica-thread.ts). So
 * its layout, its snapshot and tail handling, and its revision bookkeeping are exactly a node's,
 * and a node that installs a copy simply resumes watching from the copy's revision. Copies are
 * LMDB's consistent, compacting environment copy (`mdb_env_copy` with MDB_CP_COMPACT), taken between
 * two of the image's writes.
 *
 * Cost: the control plane applies every change once more (as one node, on its own thread) and
 * holds a node-sized LMDB file under `<dataDir>/snapshot-image` (~530 B per person,
 * bench/scale.ts).
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../log.js';
import { ThreadRpc } from '../../eval-node/http/thread-rpc.js';

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
  /** Stops watching, closes the store and ends its thread. */
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
  /** Level of the thread's logger (config.logLevel). */
  logLevel: string;
  log: Logger;
}

/** What the image's thread starts from (its workerData). */
export interface ImageThreadInit { dir: string; controlPlane: string; clusterToken: string; mapSize: number; logLevel: string; nodeId: string }

/**
 * Starts the image's thread; resolves once its store is open (before it is complete). A thread
 * that fails later leaves the image not ready (nodes then take the Watch snapshot) and is logged.
 * @throws when the store cannot be opened.
 */
export async function startImageReplica(o: ImageReplicaOptions): Promise<ImageReplica> {
  const log = o.log.child({ component: 'snapshot-image' });
  const init: ImageThreadInit = { dir: o.dir, controlPlane: o.controlPlane, clusterToken: o.clusterToken, mapSize: o.mapSize, logLevel: o.logLevel, nodeId: IMAGE_NODE_ID };
  const worker = new Worker(new URL('./replica-thread.js', import.meta.url), { workerData: init });
  const rpc = new ThreadRpc(worker);
  let st = { ready: false, revision: 0 };
  let alive = true;
  await new Promise<void>((resolve, reject) => {
    rpc.onNotice('state', (m) => { st = { ready: m.ready === true, revision: Number(m.revision) }; resolve(); });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`snapshot image thread exited (${code}) before its store opened`)));
  });
  worker.on('error', (err) => log.error({ err }, 'snapshot image thread failed; nodes take Watch snapshots'));
  worker.on('exit', () => { alive = false; rpc.close('snapshot image thread exited'); });
  let closing: Promise<void> | null = null;
  return {
    ready: () => alive && st.ready,
    revision: () => st.revision,
    copy: (dir) => rpc.call<{ revision: number; bytes: number }>('copy', { dir }).catch((e: { message?: string }) => { throw new Error(e.message ?? 'copy failed'); }),
    close() {
      closing ??= (async () => {
        if (!alive) return;
        await rpc.call('close').catch(() => {});
        await worker.terminate();
      })();
      return closing;
    },
  };
}
