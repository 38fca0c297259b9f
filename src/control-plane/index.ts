/**
 * The control plane: migrations (under an advisory lock), first-start bootstrap, the
 * management API over HTTP and the gRPC service the evaluation nodes watch.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { connect, type Sql } from './db/connect.js';
import { migrate } from './db/migrate.js';
import { bootstrap, type BootstrapResult } from './bootstrap.js';
import { startHttpServer, type RunningHttp } from './http/server.js';
import { allRoutes } from './http/app.js';

/** A running control plane. */
export interface ControlPlane {
  sql: Sql;
  http: RunningHttp;
  bootstrap: BootstrapResult;
  close(): Promise<void>;
}

/** Starts the control plane on `databaseUrl`. Ports 0 pick free ones (tests). */
export async function startControlPlane(config: Config, log: Logger, databaseUrl: string): Promise<ControlPlane> {
  const sql = connect(databaseUrl);
  try {
    const applied = await migrate(sql);
    if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
    const boot = await bootstrap(sql, config);
    const deps = { sql, config, log: log.child({ component: 'control-plane' }) };
    const http = await startHttpServer(deps, allRoutes(deps), {
      ready: async () => { await sql`SELECT 1`; return true; },
      metrics: async () => '',
    }, config.apiPort);
    return {
      sql, http, bootstrap: boot,
      async close() {
        await http.close();
        await sql.end({ timeout: 5 });
      },
    };
  } catch (e) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw e;
  }
}
