/**
 * The snapshot image's thread (replica.ts): opens the image store and keeps it current with the
 * node's Watch client, off the control plane's event loop (bench/scale.ts at 1 M persons:
 * ingestion 3,937 persons/s with the image applied on that loop, 4,085–4,519 with it here, 5,285
 * without an image). Talks to the main thread through
 * ThreadRpc: notices `state` ({ready, revision}) after opening and after every write; calls
 * `copy` ({dir} → {revision, bytes}) and `close`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../../log.js';
import { ThreadRpc } from '../../eval-node/http/thread-rpc.js';
import { openCheckedStore } from '../../eval-node/store/recover.js';
import { startWatchClient } from '../../eval-node/sync/client.js';
import type { ImageThreadInit } from './replica.js';

const init = workerData as ImageThreadInit;
const rpc = new ThreadRpc(parentPort!);
const log = createLogger(init.logLevel).child({ component: 'snapshot-image' });
const store = await openCheckedStore(init.dir, log, init.mapSize);
const state = (): void => rpc.notify('state', { ready: store.hasCompleteSnapshot(), revision: store.revision() });
store.onApplied(state);
const sync = startWatchClient(store, { controlPlane: init.controlPlane, clusterToken: init.clusterToken, nodeId: init.nodeId }, log);
rpc.serve('copy', async (payload) => {
  const { dir } = payload as { dir: string };
  const { revision } = await store.copyTo(dir);
  return { revision, bytes: fs.statSync(path.join(dir, 'data.mdb')).size };
});
rpc.serve('close', async () => {
  await sync.close();
  await store.close();
  rpc.close('image thread closed');
});
state();
