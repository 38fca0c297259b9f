/**
 * The snapshot image's thread (replica.ts): an evaluation node's store and Watch client
 * (eval-node/node.ts `startEvalNode`, the image's own config) kept off the control plane's event
 * loop (bench/scale.ts at 1 M persons: ingestion 3,937 persons/s with the image applied on that
 * loop, 4,085–4,519 with it here, 5,285 without an image). Talks to the main thread through
 * ThreadRpc: notices `state` ({ready}) after opening and after every write; calls `copy`
 * ({dir} → {revision, bytes}) and `close`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../../log.js';
import { ThreadRpc, startEvalNode } from '../../eval-node/index.js';
import type { ImageThreadInit } from './replica.js';

const init = workerData as ImageThreadInit;
const rpc = new ThreadRpc(parentPort!);
const node = await startEvalNode(init.config, createLogger(init.config.logLevel).child({ snapshot_image: true }), { nodeId: init.nodeId });
const state = (): void => rpc.notify('state', { ready: node.store.hasCompleteSnapshot() });
node.store.onApplied(state);
rpc.serve('copy', async (payload) => {
  const { dir } = payload as { dir: string };
  const { revision } = await node.store.copyTo(dir);
  return { revision, bytes: fs.statSync(path.join(dir, 'data.mdb')).size };
});
rpc.serve('close', async () => {
  await node.close();
  rpc.close('image thread closed');
});
state();
