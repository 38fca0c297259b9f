/**
 * `switchyard control-plane`: runs the control plane alone (DATABASE_URL, or the embedded
 * cluster under the data dir), until SIGINT/SIGTERM; then it drains (shutdown.ts: `/_ready` 503
 * `draining` for SWITCHYARD_DRAIN_SECONDS, still serving) and stops.
 */
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { openDatabase } from '../control-plane/db/database.js';
import { startControlPlane } from '../control-plane/index.js';
import { printBootstrap } from './print-bootstrap.js';
import { drainPlan, onShutdown, shutdownSignal } from './shutdown.js';

/** Runs until stopped; returns the exit code. */
export async function run(_argv: string[]): Promise<number> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const signal = shutdownSignal();
  const db = await openDatabase(config);
  const cp = await startControlPlane(config, log, db.url);
  printBootstrap(cp.bootstrap, cp.http.url);
  if (cp.grpc) process.stdout.write(`gRPC on ${config.host}:${cp.grpc.port}\n`);
  await onShutdown(async () => { await cp.close(); await db.release(); }, log, signal, drainPlan(config, () => cp.drain()));
  return 0;
}
