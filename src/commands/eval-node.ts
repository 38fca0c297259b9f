/**
 * `switchyard eval-node`: runs an evaluation node — LMDB store + Watch sync (src/eval-node/node.ts)
 * and the HTTP layer (src/eval-node/http/server.ts) — until SIGINT/SIGTERM, then stops HTTP
 * first (no new requests), then sync, then closes the store.
 */
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { startEvalNode } from '../eval-node/node.js';
import { startNodeHttp } from '../eval-node/http/server.js';
import { onShutdown } from './shutdown.js';

/** Runs until stopped; returns the exit code. */
export async function run(_argv: string[]): Promise<number> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const node = await startEvalNode(config, log);
  let http;
  try {
    http = await startNodeHttp({ config, log, store: node.store, sync: node.sync });
  } catch (e) {
    await node.close();
    throw e;
  }
  const running = http;
  await onShutdown(async () => {
    await running.close();
    await node.close();
  }, log);
  return 0;
}
