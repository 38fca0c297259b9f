/**
 * Question 4 of `bench/propagation.ts`: with N evaluation nodes (default 3), how long from a
 * management-API PATCH's 200 until EVERY node serves the change on `POST /flags`, over CHANGES
 * sequential changes (default 200)? Target: p99 < 20 ms.
 *
 * Deployed as it would be: the control plane (`switchyard control-plane`) and each node
 * (`switchyard eval-node`, one IO thread each: see IO_THREADS) are processes of their own, on
 * 127.0.0.1 with separate data dirs; this
 * process only sends the PATCHes and polls. (With everything in one process, the poller's own
 * requests queued behind the control plane's and nodes' work on one event loop and were most of
 * what was measured.) After each PATCH answers (its body carries the new `version`), every node
 * is polled with `/flags?v=2` for that flag until `metadata.version` equals it; the sample is the
 * time until the slowest node serves it. Same-run baselines: the PATCH round trip itself, and one
 * /flags round trip to a node. Every wait is bounded by `timeoutMs`.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { newPersonalApiKey, newProjectApiKey } from '../src/control-plane/keys/tokens.js';
import { stablePort } from '../test/support/ports.js';

/** Figures of one run, in milliseconds. */
export interface NodesPropagation { samples: number[]; patchMs: number[]; flagsMs: number[] }

/**
 * IO threads per node (BENCH_NODE_IO_THREADS, default 1): the N nodes share this machine's cores,
 * and each node's default (one IO thread per core) would run 3 × 2 IO threads on 2 cores.
 */
const IO_THREADS = Number(process.env.BENCH_NODE_IO_THREADS ?? 1);

/**
 * Pause between two polls of one node, in ms (BENCH_POLL_PAUSE_MS, default 1): polling back to
 * back, three pollers kept both cores busy answering them and slowed the very change they waited
 * for; the pause bounds what a sample can overstate by.
 */
const POLL_PAUSE_MS = Number(process.env.BENCH_POLL_PAUSE_MS ?? 1);

/** dist/src/cli.js (this file is dist/bench/propagation-nodes.js). */
const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.js');

/** Starts `switchyard <command>` with `env`; its output is kept for an error message. */
function start(command: string, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [cli, command], { env: { ...process.env, SWITCHYARD_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  child.stderr!.on('data', (d) => { out += d; });
  return { child, output: () => out };
}

/** Polls `url` until it answers 200, within `timeoutMs`. @throws naming `what` and its output. */
async function ready(what: string, url: string, proc: { child: ChildProcess; output: () => string }, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${what} exited ${proc.child.exitCode}: ${proc.output()}`);
    try { if ((await fetch(url)).status === 200) return; } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`${what} not ready at ${url}: ${proc.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs the measurement against a fresh database at `databaseUrl`. */
export async function measureNodesPropagation(databaseUrl: string, nodes: number, changes: number, timeoutMs: number): Promise<NodesPropagation> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-nodes-'));
  const personal = newPersonalApiKey();
  const token = newProjectApiKey();
  // These processes bind the ports themselves: picked here (test/support/ports.ts stablePort).
  const [apiPort, grpcPort] = [await stablePort(), await stablePort()];
  const common = { SWITCHYARD_HOST: '127.0.0.1', SWITCHYARD_CLUSTER_TOKEN: 'bench-cluster-token', SWITCHYARD_DRAIN_SECONDS: '0' };
  const procs: { child: ChildProcess; output: () => string }[] = [];
  try {
    const cp = start('control-plane', {
      ...common, DATABASE_URL: databaseUrl, SWITCHYARD_DATA_DIR: path.join(tmp, 'cp'),
      SWITCHYARD_API_PORT: String(apiPort), SWITCHYARD_GRPC_PORT: String(grpcPort),
      SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY: personal, SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY: token,
      SWITCHYARD_SNAPSHOT_IMAGE: 'false',
    });
    procs.push(cp);
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    await ready('control plane', `${apiUrl}/_health`, cp, timeoutMs);
    const nodeUrls: string[] = [];
    for (let i = 0; i < nodes; i++) {
      const port = await stablePort();
      const n = start('eval-node', {
        ...common, SWITCHYARD_DATA_DIR: path.join(tmp, `node-${i}`), SWITCHYARD_FLAGS_PORT: String(port), SWITCHYARD_CONTROL_PLANE: `127.0.0.1:${grpcPort}`,
        SWITCHYARD_IO_THREADS: String(IO_THREADS),
      });
      procs.push(n);
      nodeUrls.push(`http://127.0.0.1:${port}`);
      await ready(`node ${i}`, `http://127.0.0.1:${port}/_ready`, n, timeoutMs);
    }
    const headers = { authorization: `Bearer ${personal}`, 'content-type': 'application/json' };
    const me = await (await fetch(`${apiUrl}/api/projects/`, { headers })).json() as { results: { id: number }[] };
    const api = `${apiUrl}/api/projects/${me.results[0]!.id}/feature_flags/`;
    const created = await (await fetch(api, { method: 'POST', headers, body: JSON.stringify({
      key: 'propagation-probe', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } }) })).json() as { id: number; version: number };
    const flagsBody = JSON.stringify({ token, distinct_id: 'probe-user', flag_keys_to_evaluate: ['propagation-probe'] });
    const out: NodesPropagation = { samples: [], patchMs: [], flagsMs: [] };
    // node:http on one kept-alive connection per node: fetch's own overhead (about a millisecond a
    // call on these cores) would be most of each poll and blur when a node starts serving.
    const agents = new Map(nodeUrls.map((u) => [u, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
    const servedVersion = async (url: string): Promise<number> => {
      const t0 = performance.now();
      const text = await new Promise<string>((resolve, reject) => {
        const req = http.request(`${url}/flags?v=2`, { method: 'POST', agent: agents.get(url), headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(flagsBody) } }, (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => { data += d; });
          res.on('end', () => resolve(data));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(flagsBody);
      });
      const body = JSON.parse(text) as { flags?: Record<string, { metadata: { version: number } }> };
      out.flagsMs.push(performance.now() - t0);
      return body.flags?.['propagation-probe']?.metadata.version ?? -1;
    };
    const serving = (version: number) => Promise.all(nodeUrls.map(async (url) => {
      const t0 = performance.now();
      while ((await servedVersion(url)) !== version) {
        if (performance.now() - t0 > timeoutMs) throw new Error(`node ${url} did not serve version ${version}`);
        if (POLL_PAUSE_MS > 0) await new Promise((r) => setTimeout(r, POLL_PAUSE_MS));
      }
    }));
    await serving(created.version);
    out.flagsMs.length = 0;
    for (let n = 1; n <= changes; n++) {
      const t0 = performance.now();
      const res = await fetch(`${api}${created.id}/`, { method: 'PATCH', headers, body: JSON.stringify({ name: `change ${n}` }) });
      const { version } = await res.json() as { version: number };
      const answered = performance.now();
      out.patchMs.push(answered - t0);
      await serving(version);
      out.samples.push(performance.now() - answered);
    }
    for (const a of agents.values()) a.destroy();
    return out;
  } finally {
    await Promise.all(procs.map((p) => new Promise<void>((resolve) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) { resolve(); return; }
      const kill = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
      p.child.once('exit', () => { clearTimeout(kill); resolve(); });
      p.child.kill('SIGTERM');
    })));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
