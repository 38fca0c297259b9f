/**
 * The control plane's snapshot image (proto/switchyard.proto `SnapshotImage`):
 * a complete node store that the control plane keeps current beside Postgres, so that a node
 * with no store copies one file instead of receiving every entity through a Watch snapshot.
 *
 * The image IS a node store, kept by the node's own code: an evaluation node's store and Watch
 * client (eval-node/node.ts `startEvalNode`, {@link imageConfig}) watching this control plane's
 * gRPC port, as one more node, in a thread of its own (replica-thread.ts). So
 * its layout, its snapshot and tail handling, and its revision bookkeeping are exactly a node's,
 * and a node that installs a copy simply resumes watching from the copy's revision. Copies are
 * LMDB's consistent, compacting environment copy (`mdb_env_copy` with MDB_CP_COMPACT), taken between
 * two of the image's writes.
 *
 * Cost: the control plane applies every change once more (as one node, on its own thread) and
 * holds a node-sized LMDB file under `<dataDir>/snapshot-image/lmdb` (~530 B per person,
 * bench/scale.ts).
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';

/** Node id the image's Watch stream carries (control-plane logs and metrics). */
export const IMAGE_NODE_ID = 'control-plane-snapshot-image';

/** A running image. */
export interface ImageReplica {
  /** True once the image holds a complete snapshot (copies are served from then on). */
  ready(): boolean;
  /**
   * Copies the image into `dir` (an empty directory) as `data.mdb`.
   * @returns the copy's revision and size in bytes. @throws when LMDB cannot write the copy.
   */
  copy(dir: string): Promise<{ revision: number; bytes: number }>;
  /** Stops watching, closes the store and ends its thread. */
  close(): Promise<void>;
}

/** What the image's thread starts from (its workerData): the image node's config and id. */
export interface ImageThreadInit { config: Config; nodeId: string }

/**
 * The image node's config, from the control plane's: its store under `<dataDir>/snapshot-image`
 * (eval-node/node.ts `nodeStorePath`), watching this control plane at `controlPlane` (`host:port`),
 * never asking for an image itself.
 */
export function imageConfig(config: Config, controlPlane: string): Config {
  return { ...config, dataDir: path.join(config.dataDir, 'snapshot-image'), controlPlane, snapshotImage: false };
}

/**
 * Starts the image's thread for `config` ({@link imageConfig}); resolves once its store is open
 * (before it is complete). A thread that fails later leaves the image not ready (nodes then take
 * the Watch snapshot) and is logged. @throws when the store cannot be opened.
 */
export async function startImageReplica(config: Config, parentLog: Logger): Promise<ImageReplica> {
  const log = parentLog.child({ component: 'snapshot-image' });
  const init: ImageThreadInit = { config, nodeId: IMAGE_NODE_ID };
  // Loaded here, not at module load: the node's modules (uWebSockets.js, LMDB) cost a control
  // plane that runs no image nothing.
  const { ThreadRpc } = await import('../../eval-node/index.js');
  const worker = new Worker(new URL('./replica-thread.js', import.meta.url), { workerData: init });
  const rpc = new ThreadRpc(worker);
  let ready = false;
  let alive = true;
  await new Promise<void>((resolve, reject) => {
    rpc.onNotice('state', (m) => { ready = m.ready === true; resolve(); });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`snapshot image thread exited (${code}) before its store opened`)));
  });
  worker.on('error', (err) => log.error({ err }, 'snapshot image thread failed; nodes take Watch snapshots'));
  worker.on('exit', () => { alive = false; rpc.close('snapshot image thread exited'); });
  let closing: Promise<void> | null = null;
  return {
    ready: () => alive && ready,
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
