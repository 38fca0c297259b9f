/**
 * `switchyard start` (`make start`): embedded Postgres (unless DATABASE_URL is set), the
 * control plane (management API + gRPC) and one evaluation node (data in `<dataDir>/node`) in
 * one process; Ctrl-C stops everything cleanly, node first.
 */
import path from 'node:path';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { openDatabase } from '../control-plane/db/database.js';
import { startControlPlane, type ControlPlane } from '../control-plane/index.js';
import { startNodeService, type NodeService } from '../eval-node/service.js';
import { resolveClusterToken } from './cluster-token.js';
import { printBootstrap } from './print-bootstrap.js';
import { drainPlan, onShutdown, shutdownSignal } from './shutdown.js';

/** Runs until stopped; returns the exit code. */
export async function run(_argv: string[]): Promise<number> {
  const base = loadConfig();
  const config = Object.freeze({ ...base, clusterToken: resolveClusterToken(base) });
  const log = createLogger(config.logLevel);
  const signal = shutdownSignal(); // before anything starts: a signal during startup stops us after it
  const db = await openDatabase(config);
  if (db.adopted) log.warn('adopted the embedded Postgres left running by a stopped switchyard; it stops with this process');
  let cp: ControlPlane | null = null;
  let node: NodeService | null = null;
  const stop = async () => {
    await node?.close();
    await cp?.close();
    await db.release();
  };
  try {
    cp = await startControlPlane(config, log, db.url);
    node = await startNodeService(Object.freeze({
      ...config,
      dataDir: path.join(config.dataDir, 'node'),
      controlPlane: `127.0.0.1:${cp.grpc!.port}`,
    }), log);
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
  printBootstrap(cp.bootstrap, cp.http.url);
  process.stdout.write(`Evaluation node (/flags, /flags/definitions, capture) on ${node.http.url}\n`
    + `gRPC on ${config.host}:${cp.grpc!.port}; add a node with SWITCHYARD_CLUSTER_TOKEN from ${path.join(config.dataDir, 'cluster-token')}\n`);
  await onShutdown(stop, log, signal, drainPlan(config, () => { node?.drain(); cp?.drain(); }));
  return 0;
}
