/**
 * The `io` mode of `make bench`: node processes (`switchyard eval-node`, SWITCHYARD_IO_THREADS=N,
 * synced from the bench's control plane) beside a bare uWS process answering a fixed body of the
 * node's mean answer size (bench/uws-ceiling.ts), each driven by wrk (or autocannon without it) at
 * CONNECTIONS connections; the server's CPU read from /proc for that process alone, the
 * generator's reported by itself.
 *
 * Runs, BENCH_REPEAT times (default 3; the machine's speed moves within minutes, so the ratios
 * are taken inside one repetition and their spread is printed): the 50-flag workload for each
 * count in BENCH_IO_THREADS (default `1,2`), then — unless BENCH_FLAGS_1000=0 — the 1,000-flag
 * workload (the 50-flag mix repeated, bench/flags-workload.ts) with one IO thread. Each node row
 * prints its CPU per request beside the bare endpoint's (same threads, same answer size, same
 * repetition) and their ratio; the summary prints 2-vs-1-thread and 1,000-vs-50-flag req/s.
 * BENCH_NODE_ARGS adds node flags (e.g. `--cpu-prof`).
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { CONNECTIONS, DURATION_S, WARMUP_S, WRK, load, loadWrk, type LoadResult } from './load.js';
import { processCpuUs, spawnServer } from './proc.js';
import type { World } from './flags-world.js';
import { prng, USERS, workloadBody } from './flags-workload.js';
import { stablePort } from '../test/support/ports.js';
import { median } from './median.js';

/** IO thread counts of the `io` mode (each: a node process and a bare uWS process with that many threads). */
const IO_THREADS = (process.env.BENCH_IO_THREADS ?? '1,2').split(',').map(Number);
/** Repetitions of the whole set of io runs. */
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
/** Whether to run the 1,000-flag workload after the 50-flag runs. */
const WITH_1000 = process.env.BENCH_FLAGS_1000 !== '0';

/** One `io` run: a server process (node or bare uWS) with `threads` IO threads under the fixed-connection load. */
export interface IoRow {
  name: string;
  kind: 'node' | 'floor';
  repeat: number;
  flags: number;
  threads: number;
  /** Answer body size in bytes (the node's mean over sampled requests; the floor's fixed body). */
  bytes: number;
  load: LoadResult;
  serverCpuUsPerReq: number;
  genCpuUsPerReq: number;
}

const here = path.dirname(fileURLToPath(import.meta.url));

async function measureServer(row: Omit<IoRow, 'load' | 'serverCpuUsPerReq' | 'genCpuUsPerReq'>, pid: number, url: string, dir: string): Promise<IoRow> {
  process.stderr.write(`${row.name} (repetition ${row.repeat + 1}/${REPEAT}): warm-up ${WARMUP_S}s, run ${DURATION_S}s with ${WRK ? 'wrk' : 'autocannon'}…\n`);
  const drive = (d: number) => (WRK ? loadWrk(url, d, dir) : load(url, d));
  if (WARMUP_S > 0) await drive(WARMUP_S);
  const before = processCpuUs(pid);
  const result = await drive(DURATION_S);
  const serverCpuUsPerReq = (processCpuUs(pid) - before) / Math.max(1, result.total);
  return { ...row, load: result, serverCpuUsPerReq, genCpuUsPerReq: (result.genCpuUs ?? 0) / Math.max(1, result.total) };
}

/** Mean byte size of the node's /flags?v=2 answers over 50 sampled workload users (seeded). */
async function meanAnswerBytes(url: string, flags: number): Promise<number> {
  const rnd = prng(3);
  let total = 0;
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${url}/flags?v=2`, { method: 'POST', body: workloadBody(Math.floor(rnd() * USERS)), headers: { 'content-type': 'application/json' } });
    const body = Buffer.from(await res.arrayBuffer());
    const n = Object.keys((JSON.parse(body.toString()) as { flags: object }).flags).length;
    if (!res.ok || n !== flags) throw new Error(`expected ${flags} flags, got ${res.status} ${n}`);
    total += body.length;
  }
  return Math.round(total / 50);
}

async function startNode(dir: string, world: World, threads: number, flags: number, revision: number, tag: string): Promise<{ child: ChildProcess; url: string }> {
  const nport = await stablePort();
  const url = `http://127.0.0.1:${nport}`;
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
  const child = await spawnServer([...nodeArgs, path.join(here, '..', 'src', 'cli.js'), 'eval-node'], {
    SWITCHYARD_DATA_DIR: path.join(dir, `node-io-${tag}`), SWITCHYARD_FLAGS_PORT: String(nport), SWITCHYARD_IO_THREADS: String(threads),
    SWITCHYARD_CONTROL_PLANE: world.controlPlane, SWITCHYARD_CLUSTER_TOKEN: world.clusterToken, SWITCHYARD_LOG_LEVEL: 'warn', SWITCHYARD_EVAL_THREADS: '0',
  }, async () => {
    const ready = await fetch(`${url}/_ready`);
    if (!ready.ok || ((await ready.json()) as { revision: number }).revision < revision) return false;
    const res = await fetch(`${url}/flags?v=2`, { method: 'POST', body: workloadBody(2), headers: { 'content-type': 'application/json' } });
    return res.ok && Object.keys(((await res.json()) as { flags: object }).flags).length === flags;
  });
  return { child, url };
}

/** One node + same-size floor pair: the node is started (idle) to learn its answer size, then the floor runs, then the node. */
async function measurePair(dir: string, world: World, repeat: number, flags: number, threads: number, revision: number): Promise<IoRow[]> {
  const plural = threads > 1 ? 's' : '';
  const node = await startNode(dir, world, threads, flags, revision, `${flags}-${threads}-${repeat}`);
  try {
    const bytes = await meanAnswerBytes(node.url, flags);
    const cport = await stablePort();
    const ceiling = await spawnServer([path.join(here, 'uws-ceiling.js'), String(cport), String(threads), String(bytes)], {}, async () =>
      (await fetch(`http://127.0.0.1:${cport}/flags`, { method: 'POST', body: '{}' })).ok);
    let floor: IoRow;
    try {
      floor = await measureServer({ name: `bare uWS, ${bytes} B body, ${threads} thread${plural}`, kind: 'floor', repeat, flags, threads, bytes }, ceiling.pid!, `http://127.0.0.1:${cport}/flags`, dir);
    } finally {
      ceiling.kill('SIGKILL');
    }
    const nodeRow = await measureServer({ name: `node, ${flags} flags, IO_THREADS=${threads}`, kind: 'node', repeat, flags, threads, bytes }, node.child.pid!, `${node.url}/flags?v=2`, dir);
    return [floor, nodeRow];
  } finally {
    node.child.kill('SIGTERM');
    await new Promise((r) => node.child.once('exit', r));
  }
}

/**
 * The `io` mode (module doc): BENCH_REPEAT repetitions of the 50-flag pairs for each IO thread
 * count; then the world grows to 1,000 flags once and BENCH_REPEAT repetitions of the 1,000-flag
 * pair with one IO thread follow.
 */
export async function measureIoThreads(dir: string, world: World): Promise<IoRow[]> {
  const rows: IoRow[] = [];
  const base = await world.growTo(50);
  for (let r = 0; r < REPEAT; r++) for (const threads of IO_THREADS) rows.push(...await measurePair(dir, world, r, 50, threads, base));
  if (WITH_1000) {
    const revision = await world.growTo(1000);
    for (let r = 0; r < REPEAT; r++) rows.push(...await measurePair(dir, world, r, 1000, 1, revision));
  }
  return rows;
}

const spread = (xs: number[], d = 2) => (xs.length === 0 ? '–' : `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)} (median ${median(xs).toFixed(d)})`);

/** Prints the `io` rows as a Markdown table (each node row beside its same-run floor) and the ratios' spread over the repetitions. */
export function reportIo(rows: IoRow[]): void {
  console.log(`\nIO threads: POST /flags?v=2, ${WRK ? 'wrk (1 thread)' : 'autocannon'}, ${CONNECTIONS} connections, ${DURATION_S}s after ${WARMUP_S}s warm-up, ${REPEAT} repetitions; server and load generator are separate processes on the same ${os.availableParallelism()} vCPUs (${os.cpus()[0]?.model ?? 'unknown CPU'}); load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log('| rep | run | answer B | req/s | p50 ms | p99 ms | non-2xx | server CPU µs/req | floor CPU µs/req (bare uWS, same threads and body size) | ratio | generator CPU µs/req |');
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const floorOf = (r: IoRow) => rows.find((c) => c.kind === 'floor' && c.repeat === r.repeat && c.flags === r.flags && c.threads === r.threads);
  for (const r of rows) {
    const f = r.kind === 'node' ? floorOf(r) : undefined;
    const ratio = f ? `${(r.serverCpuUsPerReq / f.serverCpuUsPerReq).toFixed(2)}×` : '–';
    console.log(`| ${r.repeat + 1} | ${r.name} | ${r.bytes} | ${Math.round(r.load.rps)} | ${r.load.p50} | ${r.load.p99} | ${r.load.non2xx + r.load.errors} | ${r.serverCpuUsPerReq.toFixed(1)} | ${f ? f.serverCpuUsPerReq.toFixed(1) : '–'} | ${ratio} | ${r.genCpuUsPerReq.toFixed(1)} |`);
  }
  const node = (rep: number, flags: number, threads: number) => rows.find((r) => r.kind === 'node' && r.repeat === rep && r.flags === flags && r.threads === threads);
  const cpuRatios = (flags: number, threads: number) => rows.filter((r) => r.kind === 'node' && r.flags === flags && r.threads === threads)
    .map((r) => r.serverCpuUsPerReq / floorOf(r)!.serverCpuUsPerReq);
  const reps = [...new Set(rows.map((r) => r.repeat))];
  const per = (a: (rep: number) => number | null) => reps.map(a).filter((x): x is number => x !== null);
  console.log('');
  for (const threads of IO_THREADS) console.log(`node CPU per request / floor's, 50 flags, ${threads} IO thread${threads > 1 ? 's' : ''}: ${spread(cpuRatios(50, threads))}× (target ≤ 2.5× with 1 thread)`);
  if (IO_THREADS.includes(1) && IO_THREADS.includes(2)) {
    console.log(`req/s with 2 IO threads / with 1, same repetition: ${spread(per((rep) => { const a = node(rep, 50, 1); const b = node(rep, 50, 2); return a && b ? b.load.rps / a.load.rps : null; }))}× (target ≥ 1.5×)`);
  }
  if (rows.some((r) => r.flags === 1000)) {
    console.log(`node CPU per request / floor's, 1,000 flags, 1 IO thread: ${spread(cpuRatios(1000, 1))}×`);
    console.log(`req/s with 1,000 flags / with 50 flags (1 IO thread, same repetition): ${spread(per((rep) => { const a = node(rep, 50, 1); const b = node(rep, 1000, 1); return a && b ? b.load.rps / a.load.rps : null; }), 3)} (target ≥ 1/12 = 0.083)`);
  }
}
