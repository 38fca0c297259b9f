/**
 * An evaluation node's lifecycle (DESIGN.md "Evaluation node"): open the LMDB store under
 * `<dataDir>/lmdb`, serve what it holds at once, and keep it in step with the control plane
 * through the Watch client. The HTTP layer (src/eval-node/http/server.ts) attaches to
 * {@link EvalNode.store} and reads sync status from {@link EvalNode.sync}.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { WritableNodeStore } from './store/lmdb.js';
import { openCheckedStore } from './store/recover.js';
import { startWatchClient, type WatchClient, type WatchClientOptions } from './sync/client.js';
import { installSnapshotImage } from './sync/image.js';
import { ControlPlanes } from './sync/control-planes.js';

/** Location of the node's LMDB environment inside the data dir. */
export function nodeStorePath(config: Config): string {
  return path.join(config.dataDir, 'lmdb');
}

/** A running evaluation node (store + sync; HTTP is attached by the caller). */
export interface EvalNode {
  /** Identity sent to the control plane (logs, usage reports). */
  nodeId: string;
  /** The control-plane addresses and the current one, shared by every gRPC user of the node (sync/control-planes.ts). */
  planes: ControlPlanes;
  /** The node's store: read by the HTTP layer before, during and after sync, written by the Watch client. */
  store: WritableNodeStore;
  /** The Watch client: `sync.state()` for `/_ready` (with store.hasCompleteSnapshot()) and `/metrics`. */
  sync: WatchClient;
  /** 1 when the store was found damaged at start and moved aside (store/recover.ts), else 0. */
  storeMovedAside: number;
  /** The control plane's snapshot image this node started from (sync/image.ts), or null. */
  image: { revision: number; bytes: number } | null;
  /** Stops syncing and closes the store. */
  close(): Promise<void>;
}

/** Options of {@link startEvalNode}: node identity and sync tunables (tests shorten backoff). */
export interface EvalNodeOptions {
  nodeId?: string;
  sync?: Partial<Pick<WatchClientOptions, 'backoff' | 'idleTimeoutMs' | 'protocolVersion'>>;
}

/**
 * Opens the store (moving a damaged or outdated one aside: store/recover.ts) and starts syncing
 * from `config.controlPlane` (one address or several: sync/control-planes.ts); resolves as soon as the store is open (it does not wait for the
 * control plane for a store it has). A node with no store first installs the control plane's
 * snapshot image when config.snapshotImage (sync/image.ts; without one it takes a Watch snapshot).
 * @throws when config.clusterToken is null, or the store cannot be opened.
 */
export async function startEvalNode(config: Config, log: Logger, opts: EvalNodeOptions = {}): Promise<EvalNode> {
  if (config.clusterToken === null) throw new Error('SWITCHYARD_CLUSTER_TOKEN is required to run an evaluation node');
  const nlog = log.child({ component: 'eval-node' });
  const dir = nodeStorePath(config);
  const nodeId = opts.nodeId ?? `${os.hostname()}:${process.pid}`;
  const planes = new ControlPlanes(config.controlPlane);
  const image = config.snapshotImage && !fs.existsSync(path.join(dir, 'data.mdb'))
    ? await installSnapshotImage({ controlPlane: planes, clusterToken: config.clusterToken, nodeId, dir, log })
    : null;
  let storeMovedAside = 0;
  const store = await openCheckedStore(dir, nlog, config.lmdbMapSize, {
    probe: image === null, keepMovedAside: config.keepMovedAside, onMovedAside: () => { storeMovedAside++; },
  });
  nlog.info({ revision: store.revision(), complete_snapshot: store.hasCompleteSnapshot(), path: dir, from_image: image !== null }, 'node store open');
  const sync = startWatchClient(store, {
    controlPlane: planes,
    clusterToken: config.clusterToken,
    nodeId,
    ...opts.sync,
  }, log);
  let closing: Promise<void> | null = null;
  return {
    nodeId,
    planes,
    store,
    sync,
    storeMovedAside,
    image,
    close() {
      closing ??= (async () => {
        await sync.close();
        await store.close();
      })();
      return closing;
    },
  };
}
