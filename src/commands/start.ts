/**
 * `switchyard start` (`make start`): embedded Postgres (unless DATABASE_URL is set), the
 * control plane (management API + gRPC) and one evaluation node (data in `<dataDir>/node`).
 *
 * Two processes, so that Postgres is never left running by a crash: this one is a small
 * supervisor that owns the database (control-plane/db/database.ts: starts or adopts the
 * embedded cluster) and runs the services (control plane and node) in a child process
 * (`start --services`, with DATABASE_URL pointing at that database). A segfault or SIGKILL of
 * the services kills only the child; the supervisor then logs it at error level, stops Postgres
 * and exits 1. Ctrl-C (SIGINT or SIGTERM to the supervisor, passed on to the services: SIGTERM
 * drains them first, docs/operations.md) stops the services cleanly, node first, then Postgres,
 * and exits 0. The child runs in its own process group, so a terminal's
 * Ctrl-C reaches it once, through the supervisor.
 *
 * If the supervisor itself is killed (SIGKILL), the services go with it at once, as they did
 * when everything ran in one process: the child is started through util-linux `setpriv
 * --pdeathsig SIGKILL` where it exists (Linux PR_SET_PDEATHSIG: the kernel kills the child as
 * the parent dies), and otherwise exits as soon as its IPC channel to the supervisor closes. The
 * cluster left running then is adopted by the next start (database.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { openDatabase } from '../control-plane/db/database.js';
import type { ControlPlane } from '../control-plane/index.js';
import type { NodeService } from '../eval-node/service.js';
import { drainPlan, onShutdown, shutdownSignal } from './shutdown.js';

/** How long the start's summary waits for log lines still on their way from worker threads, in ms. */
const START_LOGS_SETTLE_MS = 100;

/** The argument that makes `start` the services child. */
export const SERVICES_ARG = '--services';

/** Where util-linux `setpriv` may be (module doc), in order. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'];

/** Starts `node cli.js start --services` with an IPC channel, through setpriv when found (module doc). */
function spawnServices(env: NodeJS.ProcessEnv): ChildProcess {
  const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
  const node = [process.execPath, ...process.execArgv, cli, 'start', SERVICES_ARG];
  const setpriv = SETPRIV.find((p) => fs.existsSync(p));
  const [command, ...args] = setpriv ? [setpriv, '--pdeathsig', 'SIGKILL', ...node] : node;
  return spawn(command!, args, { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], detached: true });
}

/** Runs until stopped; returns the exit code (1 when the services died on their own). */
export async function run(argv: string[]): Promise<number> {
  return argv[0] === SERVICES_ARG ? runServices() : supervise();
}

/** The supervisor: database, then the services child; see the module doc. */
async function supervise(): Promise<number> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const signal = shutdownSignal(); // before anything starts: a signal during startup stops us after it
  const db = await openDatabase(config);
  if (db.adopted) log.warn('adopted the embedded Postgres left running by a stopped switchyard; it stops with this process');
  let child: ChildProcess;
  try {
    child = spawnServices({ ...process.env, DATABASE_URL: db.url });
  } catch (e) {
    await db.release().catch(() => {});
    throw e;
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, sig) => resolve({ code, signal: sig }));
  });
  let stopping = false;
  void signal.then((received) => {
    stopping = true;
    log.info(`${received} received, stopping`);
    child.kill(received); // SIGTERM drains the services first (shutdown.ts), SIGINT does not
  });
  const end = await exited;
  const died = !stopping && (end.code !== 0 || end.signal !== null);
  if (died) log.error({ code: end.code, signal: end.signal, pid: child.pid }, 'the services process (control plane and node) died; stopping Postgres');
  await db.release().catch((e) => log.error({ err: e }, 'error while stopping Postgres'));
  return died || (end.code ?? 1) !== 0 ? 1 : 0;
}

/** The services child: control plane and node on the supervisor's database, until signalled or orphaned. */
async function runServices(): Promise<number> {
  // Loaded here, not at the top: the supervisor needs none of them (they cost it about a second
  // of CPU at each start and their memory for as long as it runs).
  const [{ startControlPlane }, { startNodeService }, { resolveClusterToken }, { printStartSummary }, { CONSOLE_DIR }] = await Promise.all([
    import('../control-plane/index.js'), import('../eval-node/service.js'), import('./cluster-token.js'),
    import('./print-bootstrap.js'), import('../control-plane/http/console.js'),
  ]);
  const base = loadConfig();
  if (!base.databaseUrl) throw new Error(`start ${SERVICES_ARG} runs under switchyard start, which sets DATABASE_URL`);
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
