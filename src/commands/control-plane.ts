/**
 * `switchyard control-plane`: runs the control plane alone (DATABASE_URL, or the embedded
 * cluster under the data dir), until SIGINT/SIGTERM.
 */
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { openDatabase } from '../control-plane/db/database.js';
import { startControlPlane } from '../control-plane/index.js';
import { printBootstrap } from './print-bootstrap.js';
import { onShutdown } from './shutdown.js';

/** Runs until stopped; returns the exit code. */
export async function run(_argv: string[]): Promise<number> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const db = await openDatabase(config);
  const cp = await startControlPlane(config, log, db.url);
  printBootstrap(cp.bootstrap, cp.http.url);
  await onShutdown(async () => { await cp.close(); await db.release(); }, log);
  return 0;
}
