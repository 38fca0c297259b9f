/**
 * `make bench-handler` (`node dist/bench/flags-handler.js [other-dist ...]`): the JavaScript cost of
 * one `POST /flags?v=2` on the node, in one process, without the kernel or uWebSockets.js.
 *
 * Question answered: how many µs of the node's own code (read the head and body, decode, find the
 * project, quota, evaluate, serialize, metrics, continuity hook) does one request of the peer
 * workload cost, and, when other builds are named, how does this build compare with them in the
 * same process (rounds interleaved, so a shared machine's moving speed hits every build alike)?
 * `make bench` measures the whole node beside a bare uWS endpoint; its runs on a crowded 2-vCPU
 * machine move by a fifth between repetitions, which hides changes of a few percent.
 *
 * Setup per build: a real LMDB node store at a fresh directory holding the bench world
 * (bench/flags-workload.ts; `BENCH_FLAGS` flags, default 50), the real FlagsEngine, inline
 * evaluator, Metrics, usage counter, evaluation share (one project: never refused) and continuity
 * recorder (its outbox append does nothing), and
 * the real `flagsHandler`. Only uWS's request and response are stand-ins: headers of posthog-node,
 * the body handed over as one last chunk, the answer's length counted. 1,000 workload users'
 * bodies (seeded) are cycled. Knobs: BENCH_FLAGS (50), BENCH_REQUESTS per round (5,000),
 * BENCH_ROUNDS (8). Prints, for each build, the best and median wall µs and CPU µs (this process's
 * user + system time) per request, and the per-round ratios of the first build to each other one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './median.js';

const FLAGS = Number(process.env.BENCH_FLAGS ?? 50);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);

/** One build's request driver. */
interface Driver { root: string; request(i: number): void }

/** The handler of the build whose `dist` directory is `root`, over a fresh store; checks one answer. */
async function setup(root: string): Promise<Driver> {
  const imp = (p: string): Promise<any> => import(pathToFileURL(path.join(root, p)).href);
  const { openNodeStore } = await imp('src/eval-node/store/lmdb.js');
  const { FlagsEngine, inlineEvaluator } = await imp('src/eval-node/pool/index.js');
  const { Metrics } = await imp('src/eval-node/http/metrics.js');
  const { FlagUsage } = await imp('src/eval-node/http/usage.js');
  const { DefinitionsFeedCache } = await imp('src/feed/definitions-feed.js');
  const { TokenBuckets } = await imp('src/eval-node/http/rate-limit.js');
  const { flagsHandler } = await imp('src/eval-node/http/flags-handler.js');
  const { ContinuityRecorder } = await imp('src/eval-node/http/continuity.js');
  const { EvaluationShare } = await imp('src/eval-node/http/eval-share.js');
  const { NO_GEOIP } = await imp('src/eval-node/geoip/index.js');
  const { testConfig } = await imp('src/config.js');
  const { createLogger } = await imp('src/log.js');
  const { workloadChanges, workloadBody, workloadFlags } = await imp('bench/flags-workload.js');

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-handler-'));
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const store = openNodeStore(path.join(dir, 'lmdb'));
  const flags = (workloadFlags(42, 7, 0, FLAGS) as { id: number }[])
    .map((f) => ({ kind: 'feature_flag', entityId: String(f.id), projectId: 1, op: 'upsert', payload: f }));
  await store.beginSnapshot(10);
  await store.stageSnapshot([...(workloadChanges() as { kind: string }[]).filter((c) => c.kind !== 'feature_flag'), ...flags]);
  await store.commitSnapshot(10);
  const log = createLogger('silent');
  const engine = new FlagsEngine(store, NO_GEOIP, true);
  const ctx = {
    config: testConfig({ dataDir: dir, evalThreads: 0 }), log, store, evaluator: inlineEvaluator(engine), metrics: new Metrics(false, null),
    usage: new FlagUsage(), feed: new DefinitionsFeedCache(), feedLimiter: new TokenBuckets(60, 60_000), geoipEnabled: false,
    needsGeoip: (id: number) => engine.needsGeoip(id), evalShare: new EvaluationShare(50),
    continuity: new ContinuityRecorder({ store, log, append: async () => {}, flagsNeeding: (p: number, r: unknown) => engine.continuityFlags(p, r) }),
  };
  const handler = flagsHandler(ctx, 'flags') as (res: unknown, req: unknown) => void;

  const bodies = Array.from({ length: 1000 }, (_, i) => new Uint8Array(Buffer.from(workloadBody((i * 7919) % 100_000) as string)).buffer);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'posthog-node/5.8.1', 'content-length': String(bodies[0]!.byteLength) };
  const req = { getHeader: (h: string) => headers[h] ?? '', getQuery: () => 'v=2' };
  let body: ArrayBuffer = bodies[0]!;
  let status = '';
  let answered = 0;
  const res = {
    onAborted() {},
    onData(cb: (chunk: ArrayBuffer, isLast: boolean) => void) { cb(body, true); },
    cork(cb: () => void) { cb(); },
    writeStatus(s: string) { status = s; return res; },
    writeHeader() { return res; },
    end(b: string | Uint8Array) { answered += typeof b === 'string' ? b.length : b.byteLength; return res; },
    getRemoteAddressAsText() { return new TextEncoder().encode('127.0.0.1').buffer; },
  };
  const request = (i: number): void => { body = bodies[i % bodies.length]!; handler(res, req); };
  request(0);
  if (status !== '200 OK' || answered === 0) throw new Error(`${root}: the first request answered ${status || 'nothing'}`);
  return { root, request };
}

async function main(): Promise<void> {
  const here = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
  const roots = [here, ...process.argv.slice(2).map((p) => path.resolve(p))];
  const drivers: Driver[] = [];
  for (const r of roots) drivers.push(await setup(r));
  for (const d of drivers) for (let i = 0; i < Math.max(2000, REQUESTS); i++) d.request(i); // warm-up (JIT)
  // Wall µs and this process's CPU µs per request, per round: on a crowded machine the wall time
  // also counts the time the process waited for a core; CPU time does not.
  const us = new Map<string, number[]>(roots.map((r) => [r, []]));
  const cpu = new Map<string, number[]>(roots.map((r) => [r, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const d of round % 2 === 0 ? drivers : [...drivers].reverse()) {
      const start = process.hrtime.bigint();
      const cpuStart = process.cpuUsage();
      for (let i = 0; i < REQUESTS; i++) d.request(i);
      const used = process.cpuUsage(cpuStart);
      us.get(d.root)!.push(Number(process.hrtime.bigint() - start) / REQUESTS / 1000);
      cpu.get(d.root)!.push((used.user + used.system) / REQUESTS);
    }
  }
  console.log(`POST /flags?v=2 handler in-process, ${FLAGS} flags, ${ROUNDS} interleaved rounds of ${REQUESTS} requests; Node ${process.version}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const baseWall = us.get(roots[0]!)!;
  const baseCpu = cpu.get(roots[0]!)!;
  for (const root of roots) {
    const wall = us.get(root)!;
    const c = cpu.get(root)!;
    const ratio = root === roots[0] ? ''
      : `  (this build / it, per round, median: wall ${median(wall.map((x, i) => baseWall[i]! / x)).toFixed(2)}, CPU ${median(c.map((x, i) => baseCpu[i]! / x)).toFixed(2)})`;
    console.log(`${root}: wall best ${Math.min(...wall).toFixed(2)} µs, median ${median(wall).toFixed(2)} µs; CPU best ${Math.min(...c).toFixed(2)} µs, median ${median(c).toFixed(2)} µs per request${ratio}`);
  }
  process.exit(0);
}

await main();
