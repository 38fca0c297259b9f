/**
 * `switchyard eval-node`: runs an evaluation node — LMDB store + Watch sync (src/eval-node/node.ts),
 * the HTTP layer (src/eval-node/http/server.ts) and the usage reporter that ships its /flags
 * counts for quotas — until SIGINT/SIGTERM, then stops HTTP first (no new requests), reports the
 * last counts, stops sync and closes the store.
 */
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { startEvalNode } from '../eval-node/node.js';
import { startNodeHttp } from '../eval-node/http/server.js';
import { startUsageReporter } from '../eval-node/sync/usage-reporter.js';
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
  const usage = startUsageReporter({
    controlPlane: config.controlPlane, clusterToken: config.clusterToken!, nodeId: node.nodeId, take: () => running.usage.takeUsage(),
  }, log);
  await onShutdown(async () => {
    await running.close();
    await usage.close();
    await node.close();
  }, log);
  return 0;
}
