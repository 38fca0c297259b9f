/**
 * `switchyard start` (`make start`): embedded Postgres (unless DATABASE_URL is set), the
 * control plane and one evaluation node in one process; Ctrl-C stops everything cleanly.
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
  let cp;
  try {
    cp = await startControlPlane(config, log, db.url);
  } catch (e) {
    await db.release();
    throw e;
  }
  printBootstrap(cp.bootstrap, cp.http.url);
  const controlPlane = cp;
  await onShutdown(async () => {
    await controlPlane.close();
    await db.release();
  }, log);
  return 0;
}
