/**
 * A whole evaluation node as one unit: the LMDB store and Watch sync (node.ts), the HTTP layer
 * (http/server.ts) and the usage reporter that ships /flags counts for quotas. Used by
 * `switchyard eval-node` and `switchyard start`.
 *
 * Stop order: HTTP first (no new requests), then the last usage report, then sync and store.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { startEvalNode, type EvalNode } from './node.js';
import { startNodeHttp, type NodeHttp } from './http/server.js';
import { startUsageReporter } from './sync/usage-reporter.js';

/** A running node. */
export interface NodeService {
  node: EvalNode;
  http: NodeHttp;
  close(): Promise<void>;
}

/**
 * Starts a node on `config` (data under `config.dataDir`, HTTP on `config.flagsPort`, control
 * plane at `config.controlPlane`). @throws when the cluster token is missing, the store cannot
 * open or the port cannot be bound (anything started is stopped again).
 */
export async function startNodeService(config: Config, log: Logger): Promise<NodeService> {
  const node = await startEvalNode(config, log);
  let http: NodeHttp;
  try {
    http = await startNodeHttp({ config, log, store: node.store, sync: node.sync });
  } catch (e) {
    await node.close();
    throw e;
  }
  const usage = startUsageReporter({
    controlPlane: config.controlPlane, clusterToken: config.clusterToken!, nodeId: node.nodeId, take: () => http.usage.takeUsage(),
  }, log);
  let closing: Promise<void> | null = null;
  return {
    node,
    http,
    close() {
      closing ??= (async () => {
        await http.close();
        await usage.close();
        await node.close();
      })();
      return closing;
    },
  };
}
