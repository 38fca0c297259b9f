/**
 * `switchyard eval-node`: runs an evaluation node (src/eval-node/service.ts) until SIGINT or
 * SIGTERM. Needs SWITCHYARD_CLUSTER_TOKEN and SWITCHYARD_CONTROL_PLANE; its own
 * SWITCHYARD_DATA_DIR and SWITCHYARD_FLAGS_PORT when it runs beside another node. On the first
 * signal it drains (shutdown.ts: `/_ready` 503 `draining` for SWITCHYARD_DRAIN_SECONDS), then stops.
 */
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { startNodeService } from '../eval-node/service.js';
import { drainPlan, onShutdown, shutdownSignal } from './shutdown.js';

/** Runs until stopped; returns the exit code. */
export async function run(_argv: string[]): Promise<number> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const signal = shutdownSignal();
  const service = await startNodeService(config, log);
  process.stdout.write(`Switchyard evaluation node on ${service.http.url} (control plane ${config.controlPlane})\n`);
  await onShutdown(() => service.close(), log, signal, drainPlan(config, () => service.drain()));
  return 0;
}
