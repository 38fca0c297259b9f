/**
 * `switchyard eval-node`: runs an evaluation node (store + Watch sync, and the HTTP layer once
 * src/eval-node/http/server.ts exports `startNodeHttp`) until SIGINT/SIGTERM.
 */
import { loadConfig } from '../config.js';
import { createLogger, type Logger } from '../log.js';
import type { Config } from '../config.js';
import { startEvalNode, type EvalNode } from '../eval-node/node.js';
import { onShutdown } from './shutdown.js';

/** What the HTTP layer's `startNodeHttp` is expected to return. */
interface NodeHttp { close(): Promise<void> }

/**
 * Attaches the HTTP server when it exists.
 * TODO(http): src/eval-node/http/server.ts exports `startNodeHttp`; adjust this call to its
 * final signature (assumed `startNodeHttp({ config, log, store, sync })`), then import it
 * statically and drop the dynamic-import guard.
 */
async function attachHttp(config: Config, log: Logger, node: EvalNode): Promise<NodeHttp | null> {
  const specifier = '../eval-node/http/server.js';
  let mod: { startNodeHttp?: (deps: { config: Config; log: Logger; store: EvalNode['store']; sync: EvalNode['sync'] }) => Promise<NodeHttp> };
  try {
    mod = await import(specifier);
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') {
      log.warn('evaluation-node HTTP layer not built yet; running sync only');
      return null;
    }
    throw e;
  }
  if (typeof mod.startNodeHttp !== 'function') return null;
  return mod.startNodeHttp({ config, log, store: node.store, sync: node.sync });
}

/** Runs until stopped; returns the exit code. */
export async function run(_argv: string[]): Promise<number> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const node = await startEvalNode(config, log);
  let http: NodeHttp | null;
  try {
    http = await attachHttp(config, log, node);
  } catch (e) {
    await node.close();
    throw e;
  }
  await onShutdown(async () => {
    await http?.close();
    await node.close();
  }, log);
  return 0;
}
