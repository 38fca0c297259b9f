/**
 * `make bench` (`node dist/bench/flags.js`): HTTP throughput and latency of the evaluation node's
 * `POST /flags?v=2` on the peer workload (research/peer-benchmarks.md "The workload": 50 flags —
 * 20 boolean rollouts at 10–90 % (seeded), 10 multivariate 34/33/33, 10 email `icontains
 * "@example.com"`, 5 cohort `plan in [pro, enterprise]`, 5 group flags on `$group_key` — for
 * `user-<n>`, n random in 0..99,999, with that doc's person properties).
 *
 * Question answered: how many /flags requests per second does one node answer on loopback, at
 * what p50/p99, in inline mode (`SWITCHYARD_EVAL_THREADS=0`) and pool mode, compared with a bare
 * uWebSockets.js endpoint returning a fixed 2 KB body in the same run; and what is p99 at half of
 * the measured maximum rate?
 *
 * Setup, as in production: a throw-away embedded Postgres (or DATABASE_URL's server) with a fresh
 * database; a real control plane (`startControlPlane`: HTTP + gRPC) on it; the workload created
 * through the management API — the 50 flags by `POST /api/projects/:id/feature_flags/` with the
 * bootstrap personal API key, in the bootstrap project (whose API key is the workload's token).
 * There is no cohort or group-type API yet, so the cohort row and the `company` group type
 * (index 1: bootstrap maps 0 to `organization`) are inserted with the control plane's store
 * functions (row + change-log entry in one transaction, as the real writers do). Then, per mode, a
 * fresh node (`startNodeService`: LMDB store synced over real gRPC, HTTP, usage reporter) is
 * started, `/_ready` awaited and one request checked for all 50 flags before load. Everything runs
 * in this process except Postgres and the load generator: autocannon runs in a CHILD process so it
 * does not share the server's event loop (server CPU figures include the in-process control plane,
 * which is idle during load). Loopback only; every run is bounded by its duration.
 * Knobs (env): BENCH_DURATION_S (10), BENCH_WARMUP_S (3), BENCH_CONNECTIONS (50),
 * BENCH_POOL_THREADS (2), BENCH_MODES (`ceiling,inline,pool,io`), BENCH_IO_THREADS (`1,2`), BENCH_REPEAT (3),
 * BENCH_NODE_ARGS (extra node flags for the io-mode node, e.g. `--cpu-prof`), WRK_PATH (wrk, set by
 * `make bench`), DATABASE_URL (use that Postgres).
 *
 * The `io` mode (bench/flags-io.ts): per thread count, a node process (`switchyard eval-node`,
 * SWITCHYARD_IO_THREADS=N) and a bare uWS process answering a body of the node's mean answer size,
 * under wrk (one thread, fixed connections; the node's CPU from /proc, wrk's from bash `times`),
 * BENCH_REPEAT times (3), then the same with the workload grown to 1,000 flags (BENCH_FLAGS_1000=0
 * skips it); ratios to the same-repetition floor and their spread are printed.
 *
 * Current figures beside their same-run floors: docs/benchmarks.md (history in git).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startNodeService } from '../src/eval-node/service.js';
import { workloadBody } from './flags-workload.js';
import { CONNECTIONS, DURATION_S, WARMUP_S, load, type LoadResult } from './load.js';
import { waitReady } from './proc.js';
import { startWorld, type World } from './flags-world.js';
import { measureIoThreads, reportIo } from './flags-io.js';
import { ceilingHandler } from './uws-ceiling.js';

const POOL_THREADS = Number(process.env.BENCH_POOL_THREADS ?? 2);
const MODES = (process.env.BENCH_MODES ?? 'ceiling,inline,pool,io').split(',');

/** A bare uWS endpoint in this process answering a fixed 2,048-byte JSON (the ceiling; bench/uws-ceiling.ts). */
function startCeiling(): Promise<{ url: string; close(): void }> {
  return new Promise((resolve, reject) => {
    uWS.App().post('/*', ceilingHandler).listen('127.0.0.1', 0, (s) => {
      if (!s) return reject(new Error('ceiling: cannot listen'));
      resolve({ url: `http://127.0.0.1:${uWS.us_socket_local_port(s)}/flags`, close: () => uWS.us_listen_socket_close(s) });
    });
  });
}

interface Row {
  name: string;
  max: LoadResult;
  half?: LoadResult;
  /** The uWS ceiling endpoint driven at the same paced rate: the latency floor of the generator. */
  halfBaseline?: LoadResult;
  rssMb: number;
  /** Server-process CPU (all threads) per answered request during the max-rate run, in µs. */
  cpuUsPerReq: number;
  /** The server's event-loop delay during the half-load run (p99 and max, ms): tells node stalls from a starved process. */
  halfLoopDelay?: { p99: number; max: number };
}

async function measure(name: string, url: string, withHalf: boolean, baselineUrl?: string): Promise<Row> {
  process.stderr.write(`${name}: warm-up ${WARMUP_S}s, run ${DURATION_S}s…\n`);
  if (WARMUP_S > 0) await load(url, WARMUP_S);
  const cpu0 = process.cpuUsage();
  const max = await load(url, DURATION_S);
  const cpu = process.cpuUsage(cpu0);
  const cpuUsPerReq = (cpu.user + cpu.system) / Math.max(1, max.total);
  const rssMb = process.memoryUsage().rss / 1024 / 1024;
  let half: LoadResult | undefined;
  let halfBaseline: LoadResult | undefined;
  let halfLoopDelay: Row['halfLoopDelay'];
  if (withHalf) {
    process.stderr.write(`${name}: half load ${Math.round(max.rps / 2)} req/s for ${DURATION_S}s…\n`);
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    half = await load(url, DURATION_S, Math.max(1, Math.round(max.rps / 2)));
    delay.disable();
    halfLoopDelay = { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 };
    // The generator's own latency at that rate, against the bare uWS endpoint (same run).
    if (baselineUrl) halfBaseline = await load(baselineUrl, DURATION_S, Math.max(1, Math.round(max.rps / 2)));
  }
  return { name, max, half, halfBaseline, rssMb, cpuUsPerReq, halfLoopDelay };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-flags-'));
  const log = createLogger('silent');
  const rows: Row[] = [];
  let world: World | null = null;
  try {
    const needsNode = MODES.includes('inline') || MODES.includes('pool') || MODES.includes('io');
    if (needsNode) {
      process.stderr.write('control plane: embedded Postgres, 50 flags through the management API…\n');
      world = await startWorld(dir, log);
    }
    let ceilingRps = 0;
    // The ceiling stays up for the whole run: it is also the latency baseline of the half-load runs.
    const ceiling = MODES.includes('ceiling') ? await startCeiling() : null;
    try {
    if (ceiling) {
      const r = await measure('uWS ceiling (fixed 2 KB)', ceiling.url, false);
      ceilingRps = r.max.rps;
      rows.push(r);
    }
    for (const mode of ['inline', 'pool'].filter((m) => MODES.includes(m))) {
      const threads = mode === 'inline' ? 0 : POOL_THREADS;
      // A fresh node per mode (own LMDB), synced from the control plane over real gRPC.
      const config = testConfig({ dataDir: path.join(dir, `node-${mode}`), controlPlane: world!.controlPlane, evalThreads: threads });
      const service = await startNodeService(config, log);
      try {
        const url = service.http.url;
        await waitReady(`${url}/_ready`);
        // Fidelity check before load: all 50 flags answered.
        const res = await fetch(`${url}/flags?v=2`, { method: 'POST', body: workloadBody(2), headers: { 'content-type': 'application/json' } });
        const flags = Object.keys(((await res.json()) as { flags: object }).flags);
        if (res.status !== 200 || flags.length !== 50) throw new Error(`${mode}: expected 50 flags, got ${res.status} ${flags.length}`);
        rows.push(await measure(mode === 'inline' ? 'node inline (EVAL_THREADS=0)' : `node pool (EVAL_THREADS=${threads})`, `${url}/flags?v=2`, true, ceiling?.url));
      } finally {
        await service.close();
      }
    }
    } finally {
      ceiling?.close();
    }
    report(rows, ceilingRps);
    if (MODES.includes('io')) reportIo(await measureIoThreads(dir, world!));
  } finally {
    await world?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function report(rows: Row[], ceilingRps: number): void {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`\nPOST /flags?v=2, 50 flags, ${CONNECTIONS} connections, ${DURATION_S}s after ${WARMUP_S}s warm-up; autocannon in a child process`);
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`Node ${process.version}, ${os.availableParallelism()} vCPU (${cpu}); load average at the end ${load} (other processes share the machine)\n`);
  console.log('| run | req/s | p50 ms | p99 ms | non-2xx | RSS MB | server CPU µs/req | req/s per core (1e6/CPU µs) | vs uWS ceiling | half load: req/s, p50/p99 ms | same rate on the uWS ceiling: p50/p99 ms | half load: server loop delay p99/max ms |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|');
  for (const r of rows) {
    const ratio = ceilingRps > 0 ? `${((r.max.rps / ceilingRps) * 100).toFixed(1)} %` : '–';
    const half = r.half ? `${Math.round(r.half.rps)}, ${r.half.p50}/${r.half.p99}` : '–';
    const base = r.halfBaseline ? `${r.halfBaseline.p50}/${r.halfBaseline.p99}` : '–';
    const delay = r.halfLoopDelay ? `${r.halfLoopDelay.p99.toFixed(1)}/${r.halfLoopDelay.max.toFixed(1)}` : '–';
    console.log(`| ${r.name} | ${Math.round(r.max.rps)} | ${r.max.p50} | ${r.max.p99} | ${r.max.non2xx + r.max.errors} | ${r.rssMb.toFixed(0)} | ${r.cpuUsPerReq.toFixed(1)} | ${Math.round(1e6 / r.cpuUsPerReq)} | ${ratio} | ${half} | ${base} | ${delay} |`);
  }
  const inline = rows.find((r) => r.name.startsWith('node inline'));
  const pool = rows.find((r) => r.name.startsWith('node pool'));
  if (inline && pool) {
    const faster = inline.max.rps >= pool.max.rps ? 'inline' : 'pool';
    console.log(`\nfaster mode: ${faster} (inline ${Math.round(inline.max.rps)} vs pool ${Math.round(pool.max.rps)} req/s)`);
  }
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
