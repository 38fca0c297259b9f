/**
 * The `io` mode of `make bench`: for each count in BENCH_IO_THREADS (default
 * `1,2`), a bare uWS process and a node process (`switchyard eval-node`, SWITCHYARD_IO_THREADS=N,
 * synced from the bench's control plane), each driven by wrk (or autocannon without it) at
 * CONNECTIONS connections; the server's CPU read from /proc for that process alone, the
 * generator's reported by itself. Prints req/s, p50/p99, CPU-µs per request and the ratio to the
 * bare endpoint with the same threads. BENCH_NODE_ARGS adds node flags (e.g. `--cpu-prof`).
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONNECTIONS, DURATION_S, WARMUP_S, WRK, load, loadWrk, type LoadResult } from './load.js';
import { processCpuUs, spawnServer } from './proc.js';
import type { World } from './flags-world.js';
import { workloadBody } from './flags-workload.js';
import { stablePort } from '../test/support/ports.js';

/** IO thread counts of the `io` mode (each: a node process and a bare uWS process with that many threads). */
const IO_THREADS = (process.env.BENCH_IO_THREADS ?? '1,2').split(',').map(Number);

/** One `io` run: a server process (node or bare uWS) with `threads` IO threads under the fixed-connection load. */
export interface IoRow { name: string; threads: number; load: LoadResult; serverCpuUsPerReq: number; genCpuUsPerReq: number }

async function measureServer(name: string, threads: number, pid: number, url: string, dir: string): Promise<IoRow> {
  process.stderr.write(`${name}: warm-up ${WARMUP_S}s, run ${DURATION_S}s with ${WRK ? 'wrk' : 'autocannon'}…\n`);
  const drive = (d: number) => (WRK ? loadWrk(url, d, dir) : load(url, d));
  if (WARMUP_S > 0) await drive(WARMUP_S);
  const before = processCpuUs(pid);
  const result = await drive(DURATION_S);
  const serverCpuUsPerReq = (processCpuUs(pid) - before) / Math.max(1, result.total);
  return { name, threads, load: result, serverCpuUsPerReq, genCpuUsPerReq: (result.genCpuUs ?? 0) / Math.max(1, result.total) };
}

/**
 * The `io` mode: for each count in BENCH_IO_THREADS, a bare uWS process and a
 * node process (`switchyard eval-node`, synced from the world's control plane) with that many IO
 * threads, each driven by the same autocannon child at CONNECTIONS connections. Server CPU is
 * read from /proc for the server process alone; the generator reports its own.
 */
export async function measureIoThreads(dir: string, world: World): Promise<IoRow[]> {
  const rows: IoRow[] = [];
  const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.js');
  const ceilingJs = path.join(path.dirname(fileURLToPath(import.meta.url)), 'uws-ceiling.js');
  for (const threads of IO_THREADS) {
    const cport = await stablePort();
    const ceiling = await spawnServer([ceilingJs, String(cport), String(threads)], {}, async () =>
      (await fetch(`http://127.0.0.1:${cport}/flags`, { method: 'POST', body: '{}' })).ok);
    try {
      rows.push(await measureServer(`uWS ceiling (fixed 2 KB), ${threads} thread${threads > 1 ? 's' : ''}`, threads, ceiling.pid!, `http://127.0.0.1:${cport}/flags`, dir));
    } finally {
      ceiling.kill('SIGKILL');
    }
    const nport = await stablePort();
    const url = `http://127.0.0.1:${nport}`;
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
    const node = await spawnServer([...nodeArgs, cli, 'eval-node'], {
      SWITCHYARD_DATA_DIR: path.join(dir, `node-io-${threads}`), SWITCHYARD_FLAGS_PORT: String(nport), SWITCHYARD_IO_THREADS: String(threads),
      SWITCHYARD_CONTROL_PLANE: world.controlPlane, SWITCHYARD_CLUSTER_TOKEN: world.clusterToken, SWITCHYARD_LOG_LEVEL: 'warn', SWITCHYARD_EVAL_THREADS: '0',
    }, async () => {
      if (!(await fetch(`${url}/_ready`)).ok) return false;
      const res = await fetch(`${url}/flags?v=2`, { method: 'POST', body: workloadBody(2), headers: { 'content-type': 'application/json' } });
      return res.ok && Object.keys(((await res.json()) as { flags: object }).flags).length === 50;
    });
    try {
      rows.push(await measureServer(`node, IO_THREADS=${threads}`, threads, node.pid!, `${url}/flags?v=2`, dir));
    } finally {
      node.kill('SIGTERM');
      await new Promise((r) => node.once('exit', r));
    }
  }
  return rows;
}

/** Prints the `io` rows as a Markdown table, with each node row's ratio to the bare uWS row of the same threads and the 2-vs-1-thread ratio. */
export function reportIo(rows: IoRow[]): void {
  console.log(`\nIO threads: POST /flags?v=2, 50 flags, ${WRK ? 'wrk (1 thread)' : 'autocannon'}, ${CONNECTIONS} connections, ${DURATION_S}s after ${WARMUP_S}s warm-up; server and load generator are separate processes on the same ${os.availableParallelism()} vCPUs`);
  console.log('| run | req/s | p50 ms | p99 ms | non-2xx | server CPU µs/req | generator CPU µs/req | vs uWS ceiling, same threads |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const ceiling = rows.find((c) => c.threads === r.threads && c.name.startsWith('uWS'));
    const ratio = ceiling && ceiling !== r ? `${((r.load.rps / ceiling.load.rps) * 100).toFixed(1)} %` : '–';
    console.log(`| ${r.name} | ${Math.round(r.load.rps)} | ${r.load.p50} | ${r.load.p99} | ${r.load.non2xx + r.load.errors} | ${r.serverCpuUsPerReq.toFixed(1)} | ${r.genCpuUsPerReq.toFixed(1)} | ${ratio} |`);
  }
  const node = (t: number) => rows.find((r) => r.threads === t && r.name.startsWith('node'));
  const one = node(1);
  const two = node(2);
  if (one && two) console.log(`\nnode with 2 IO threads / 1 IO thread: ${(two.load.rps / one.load.rps).toFixed(2)}× req/s (${Math.round(two.load.rps)} vs ${Math.round(one.load.rps)})`);
}
