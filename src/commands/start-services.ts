/**
 * The services child of `switchyard start` (start.ts, `start --services`): the control plane and
 * one evaluation node (data in `<dataDir>/node`) on the database the supervisor opened
 * (DATABASE_URL), until signalled (SIGTERM drains first, shutdown.ts) or orphaned (the supervisor's
 * IPC channel closes). Its own module so that the supervisor does not load the services' code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { startControlPlane, type ControlPlane } from '../control-plane/index.js';
import { startNodeService, type NodeService } from '../eval-node/service.js';
import { resolveClusterToken } from './cluster-token.js';
import { printStartSummary } from './print-bootstrap.js';
import { CONSOLE_DIR } from '../control-plane/http/console.js';
import { drainPlan, onShutdown, shutdownSignal } from './shutdown.js';

/** How long the start's summary waits for log lines still on their way from worker threads, in ms. */
const START_LOGS_SETTLE_MS = 100;
/**
 * Longest the start's summary waits for the node's first snapshot, in ms: the summary then
 * follows the sync's log lines (snapshot sent, applied) and the node it names already serves.
 */
const FIRST_SNAPSHOT_WAIT_MS = 5_000;

/** The services child: control plane and node on the supervisor's database, until signalled or orphaned. */
export async function runServices(): Promise<number> {
  const base = loadConfig();
  if (!base.databaseUrl) throw new Error('start --services runs under switchyard start, which sets DATABASE_URL');
  const config = Object.freeze({ ...base, clusterToken: resolveClusterToken(base) });
  const log = createLogger(config.logLevel);
  if (process.connected) {
    // The supervisor is gone (killed): stop serving at once so the next start finds the ports free.
    process.once('disconnect', () => {
      log.error('the switchyard start supervisor is gone; exiting');
      process.exit(1);
    });
    process.channel?.unref(); // the channel alone does not keep this process running
  }
  const signal = shutdownSignal();
  let cp: ControlPlane | null = null;
  let node: NodeService | null = null;
  const stop = async () => {
    await node?.close();
    await cp?.close();
  };
  try {
    cp = await startControlPlane(config, log, config.databaseUrl!);
    node = await startNodeService(Object.freeze({
      ...config,
      dataDir: path.join(config.dataDir, 'node'),
      controlPlane: `127.0.0.1:${cp.grpc!.port}`,
    }), log);
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
  const consoleBuilt = fs.existsSync(path.join(CONSOLE_DIR, 'app.js'));
  const synced = Date.now() + FIRST_SNAPSHOT_WAIT_MS;
  while (!node.node.store.hasCompleteSnapshot() && Date.now() < synced) await new Promise((r) => setTimeout(r, 20));
  // IO threads' log lines reach stdout through the main thread's event loop, after it moved on:
  // let those written during the start arrive first, so the summary ends the start's output.
  await new Promise((r) => setTimeout(r, START_LOGS_SETTLE_MS));
  printStartSummary(cp.bootstrap, {
    apiUrl: cp.http.url, consoleUrl: consoleBuilt ? `${cp.http.url}/` : null, flagsUrl: node.http.url,
    grpc: `${config.host}:${cp.grpc!.port}`, clusterTokenFile: path.join(config.dataDir, 'cluster-token'),
  }, config.bootstrapPersonalApiKey);
  await onShutdown(stop, log, signal, drainPlan(config, () => { node?.drain(); cp?.drain(); }));
  process.removeAllListeners('disconnect');
  return 0;
}
