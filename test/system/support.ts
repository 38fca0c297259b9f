/**
 * Building blocks of the system tests: a real control plane (Postgres, management HTTP, gRPC;
 * bound to port 0 at first, then stopped and started again on the ports it got) and whole evaluation nodes
 * (startNodeService, or `node dist/src/cli.js eval-node` as a child process), each with its own
 * data dir, plus small HTTP helpers for /flags and capture.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startGrpcServer, type GrpcServer } from '../../src/control-plane/grpc/server.js';
import { startControlPlane, type ControlPlane } from '../../src/control-plane/index.js';
import { startNodeService, type NodeService } from '../../src/eval-node/service.js';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane.js';
import { waitFor } from '../support/wait.js';
import { get, type Reply } from './http-calls.js';

export { flags, get, post, type Reply } from './http-calls.js';

/** Quiet unless SYS_LOG names a level (e.g. SYS_LOG=warn node dist/test/run.js test/system). */
export const log = createLogger(process.env.SYS_LOG ?? 'silent');

/** The repository's dist/ directory (this file is dist/test/system/support.js). */
const distDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * SYS_EVAL_THREADS=<n> runs the in-process nodes with n evaluation worker threads (pool mode),
 * e.g. `SYS_EVAL_THREADS=2 node dist/test/run.js test/system`.
 */

/** A control plane whose gRPC server can be stopped and started again on the same port. */
export interface SystemCluster {
  t: TestControlPlane;
  grpcPort: number;
  /** `host:port` nodes connect to. */
  controlPlane: string;
  /** Stops gRPC only (the management API keeps answering). */
  stopGrpc(): Promise<void>;
  /** Starts gRPC again on the same port and database. */
  startGrpc(): Promise<void>;
  /**
   * Stops the whole control plane (HTTP, gRPC, its Postgres pool) and, unless `down` is true,
   * starts a new one on the same database and ports (migrations and bootstrap run again).
   */
  restartControlPlane(opts?: { down?: boolean }): Promise<void>;
  /** Starts the control plane stopped by `restartControlPlane({ down: true })`. */
  startControlPlane(): Promise<void>;
  /** A node's config: its own data dir, a free flags port, this control plane. */
  nodeConfig(dataDir: string, overrides?: Partial<Config>): Config;
  /** A new temporary directory, removed on close. */
  tempDir(prefix?: string): string;
  /** Starts an in-process node service (closed on close unless closed before). */
  startNode(dataDir: string, overrides?: Partial<Config>): Promise<NodeService>;
  close(): Promise<void>;
}

export async function startCluster(overrides: Partial<Config> = {}): Promise<SystemCluster> {
  // Bound to port 0 (nothing can take the port between pick and bind); restarts reuse the ports.
  const t: TestControlPlane = await startTestControlPlane({ grpcPort: 0, apiPort: 0, ...overrides });
  if (!t.cp.grpc) throw new Error('the system cluster needs gRPC (a cluster token)');
  const grpcPort = t.cp.grpc.port;
  /** t.config with the ports the first start got, for starting again on them. */
  const fixed: Config = Object.freeze({ ...t.config, grpcPort, apiPort: Number(new URL(t.baseUrl).port) });
  let grpc: GrpcServer | null = null; // a restarted server (the control plane's own is t.cp.grpc)
  let second: ControlPlane | null = null; // a control plane started again on the same database
  let ownStopped = false;
  const dirs: string[] = [];
  const evalThreads = Number(process.env.SYS_EVAL_THREADS ?? t.config.evalThreads);
  const nodes = new Set<NodeService>();
  const c: SystemCluster = {
    t, grpcPort, controlPlane: `127.0.0.1:${grpcPort}`,
    async stopGrpc() {
      if (!ownStopped) { ownStopped = true; await t.cp.grpc?.close(); }
      await grpc?.close();
      grpc = null;
    },
    async startGrpc() {
      assert.equal(grpc, null, 'gRPC already restarted');
      assert.ok(ownStopped, 'the control plane gRPC is still running');
      grpc = await startGrpcServer({ sql: t.db.sql, config: fixed, log });
    },
    async restartControlPlane(opts = {}) {
      await grpc?.close();
      grpc = null;
      ownStopped = true;
      await t.cp.close();
      await second?.close();
      second = null;
      if (!opts.down) await c.startControlPlane();
    },
    async startControlPlane() {
      assert.equal(second, null, 'a second control plane is running');
      second = await startControlPlane(fixed, log, t.db.url);
    },
    nodeConfig(dataDir, o = {}) {
      return { ...fixed, dataDir, flagsPort: 0, controlPlane: c.controlPlane, clusterToken: t.config.clusterToken, evalThreads, ...o };
    },
    tempDir(prefix = 'switchyard-system-') {
      const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    async startNode(dataDir, o = {}) {
      const svc = await startNodeService(c.nodeConfig(dataDir, o), log);
      nodes.add(svc);
      const close = svc.close.bind(svc);
      svc.close = async () => { nodes.delete(svc); await close(); };
      return svc;
    },
    async close() {
      for (const n of [...nodes]) await n.close().catch(() => {});
      await grpc?.close().catch(() => {});
      await second?.close().catch(() => {});
      await t.close();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    },
  };
  return c;
}

/** Creates a flag through the management API (F2); asserts 201 and returns the flag. */
export async function createFlag(c: SystemCluster, body: Record<string, unknown>): Promise<{ id: number; key: string; version: number }> {
  const r = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, { body });
  assert.equal(r.status, 201, r.text);
  return r.body as { id: number; key: string; version: number };
}

/** Waits until `GET /_ready` answers 200. */
export async function waitReady(nodeUrl: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`${nodeUrl}/_ready`, async () => {
    try { return (await get(`${nodeUrl}/_ready`)).status === 200; } catch { return false; }
  }, { timeoutMs, intervalMs: 50 });
}

/** Count of `events` rows per uuid among `uuids`. */
export async function eventCounts(t: TestControlPlane, uuids: string[]): Promise<Map<string, number>> {
  const rows = await t.db.sql<{ uuid: string; n: number }[]>`
    SELECT uuid::text AS uuid, count(*)::int AS n FROM events WHERE project_id = ${t.projectId} AND uuid::text = ANY(${uuids}) GROUP BY uuid`;
  return new Map(rows.map((r) => [r.uuid, r.n]));
}

/** Waits until every uuid has exactly one row (and asserts none has more). */
export async function waitForEventsOnce(t: TestControlPlane, uuids: string[], timeoutMs = 60_000): Promise<void> {
  await waitFor(`${uuids.length} events in Postgres`, async () => {
    const counts = await eventCounts(t, uuids);
    for (const [u, n] of counts) assert.equal(n, 1, `event ${u} stored ${n} times`);
    return counts.size === uuids.length;
  }, { timeoutMs, intervalMs: 100 });
}

/** A running `switchyard eval-node` child process. */
export interface NodeProcess {
  child: ChildProcess;
  url: string;
  /** Sends `signal` and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Everything the child wrote to stdout and stderr so far. */
  output(): string;
}

/** The eval-node's log line (pino JSON, level info) that gives the HTTP port it bound. */
const LISTENING_MSG = 'evaluation node HTTP listening';

/** The port in the eval-node's "listening" log line among `output`'s lines, or null before it. */
function listeningPort(output: string): number | null {
  for (const line of output.split('\n')) {
    if (!line.includes(LISTENING_MSG)) continue;
    try {
      const rec = JSON.parse(line) as { msg?: string; port?: unknown };
      if (rec.msg === LISTENING_MSG && typeof rec.port === 'number') return rec.port;
    } catch { /* a partial line: read again later */ }
  }
  return null;
}

/**
 * Starts `node dist/src/cli.js eval-node` on `dataDir` (`env` added to its environment) and waits
 * until it answers `/_health`. Without `port` the child binds port 0 and the port is read from its
 * "listening" log line (so its log level is `info` unless `env` names one that shows that line);
 * with `port` (a restart on the port an earlier child got) it binds that.
 */
export async function spawnNode(c: SystemCluster, dataDir: string, port?: number, env: Record<string, string> = {}): Promise<NodeProcess> {
  const level = env.SWITCHYARD_LOG_LEVEL ?? (port === undefined ? 'info' : 'silent');
  if (port === undefined && !['info', 'debug', 'trace'].includes(level)) {
    throw new Error(`spawnNode without a port reads the port from the info log: SWITCHYARD_LOG_LEVEL=${level} hides it`);
  }
  const child = spawn(process.execPath, [path.join(distDir, 'src', 'cli.js'), 'eval-node'], {
    env: {
      ...process.env,
      SWITCHYARD_DATA_DIR: dataDir,
      SWITCHYARD_FLAGS_PORT: String(port ?? 0),
      SWITCHYARD_HOST: '127.0.0.1',
      SWITCHYARD_CONTROL_PLANE: c.controlPlane,
      SWITCHYARD_CLUSTER_TOKEN: c.t.config.clusterToken!,
      ...env,
      SWITCHYARD_LOG_LEVEL: level,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let url = port === undefined ? '' : `http://127.0.0.1:${port}`;
  const proc: NodeProcess = {
    child, url,
    output: () => output,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      // Unref'd: a pending wait must not keep the test process alive once the child is gone.
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000).unref())]);
      if (child.exitCode === null && child.signalCode === null) { child.kill('SIGKILL'); await exited; }
    },
  };
  try {
    await waitFor(`eval-node child listening${port === undefined ? '' : ` on ${port}`}`, async () => {
      if (child.exitCode !== null) throw new Error(`eval-node exited ${child.exitCode}: ${output}`);
      if (url === '') {
        const bound = listeningPort(output);
        if (bound === null) return false;
        url = proc.url = `http://127.0.0.1:${bound}`;
      }
      try { return (await get(`${url}/_health`)).status === 200; } catch { return false; }
    }, { timeoutMs: 30_000, intervalMs: 50 });
  } catch (e) {
    await proc.kill('SIGKILL');
    throw e;
  }
  return proc;
}
