/**
 * The autocannon driver of `switchyard load`: splits one run's connections (and rate) over
 * generator processes (workers/load.ts, forked), collects autocannon's raw results from each and
 * merges them with `autocannon.aggregateResult` (latency histograms are added, not averaged).
 *
 * Connections are numbered 0 … C−1 over all processes; connection j goes to URL j mod n, so
 * several nodes share the connections round-robin without a load balancer. At a fixed rate R,
 * connection j gets ⌊R/C⌋ requests per second plus one for the first R mod C connections
 * (autocannon's own split), and C is at most R. autocannon paces a connection by a budget per
 * second sent as fast as answers come; so that the connections' budgets do not all fall at the
 * same instant, each process runs its connections as up to {@link SLOTS} autocannon instances
 * started at evenly spaced offsets within the first second.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import { WORKERS_DIR } from '../paths.js';
import type { BodySpec } from './bodies.js';

/** autocannon instances per process at a fixed rate (staggered starts; see the module doc). */
const SLOTS = 10;
/** Distinct request bodies each process generates (its connections share them out: workers/load.ts). */
const BODIES_PER_WORKER = 1000;

/** One autocannon instance of a worker: its share of connections, URLs and rate. */
export interface WorkerSlot { urls: string[]; connections: number; rate: number | null; delayMs: number }

/** What a generator process is sent. */
export interface WorkerJob { spec: BodySpec; bodies: number; seed: number; durationS: number; timeoutS: number; slots: WorkerSlot[] }

/** What a generator process answers: autocannon's raw results (skipAggregateResult), or an error. */
export type WorkerReply = { results: unknown[] } | { error: string };

/** One run's settings. */
export interface RunPlan { urls: string[]; spec: BodySpec; connections: number; rate: number | null; durationS: number; timeoutS: number; workers: number }

/** One run's figures. Latencies in milliseconds (autocannon's histogram: whole-ms resolution). */
export interface RunResult {
  /** Target rate (req/s), null when the connections went as fast as they could. */
  target_rps: number | null;
  connections: number;
  workers: number;
  duration_s: number;
  /**
   * Answered requests (any status), and answers per second: each autocannon instance's answers
   * over its own measured time (which ends at its first 1 s sample tick after `duration_s`), summed.
   */
  requests: number;
  rps: number;
  latency_ms: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Answers by HTTP status code. */
  status: Record<string, number>;
  /** Answers outside 200–299. */
  non_2xx: number;
  /** Requests without an answer: connection errors and timeouts. */
  errors: { connection: number; timeouts: number };
}

/** The processes, slots and connection numbers of a run (pure; see the module doc). */
export function planJobs(plan: RunPlan, seedBase = 1): WorkerJob[] {
  const connections = plan.rate === null ? plan.connections : Math.min(plan.connections, plan.rate);
  const workers = Math.min(plan.workers, connections);
  const perWorker = (w: number) => Math.floor(connections / workers) + (w < connections % workers ? 1 : 0);
  const connRate = (j: number) => (plan.rate === null ? 0 : Math.floor(plan.rate / connections) + (j < plan.rate % connections ? 1 : 0));
  const slotsPer = plan.rate === null ? 1 : Math.min(SLOTS, perWorker(workers - 1));
  const rotate = (j: number) => plan.urls.map((_, i) => plan.urls[(j + i) % plan.urls.length]!);
  const jobs: WorkerJob[] = [];
  let j = 0;
  for (let w = 0; w < workers; w++) {
    const c = perWorker(w);
    const slots: WorkerSlot[] = [];
    for (let k = 0; k < slotsPer; k++) {
      const sc = Math.floor(c / slotsPer) + (k < c % slotsPer ? 1 : 0);
      let rate = 0;
      for (let i = 0; i < sc; i++) rate += connRate(j + i);
      slots.push({ urls: rotate(j), connections: sc, rate: plan.rate === null ? null : rate, delayMs: plan.rate === null ? 0 : Math.round((1000 * (w + workers * k)) / (workers * slotsPer)) });
      j += sc;
    }
    jobs.push({ spec: plan.spec, bodies: BODIES_PER_WORKER, seed: seedBase + w, durationS: plan.durationS, timeoutS: plan.timeoutS, slots });
  }
  return jobs;
}

/** Runs one job in a forked generator process. @throws when the process fails or reports an error. */
function runJob(job: WorkerJob): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(WORKERS_DIR, 'load.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let reply: WorkerReply | null = null;
    child.on('message', (m: WorkerReply) => { reply = m; });
    child.on('error', reject);
    child.on('exit', (code) => {
      const r = reply as WorkerReply | null;
      if (r && 'results' in r) resolve(r.results);
      else reject(new Error(r ? `load generator failed: ${r.error}` : `load generator exited with code ${code} before reporting`));
    });
    child.send(job);
  });
}

/** The fields of autocannon's aggregated result this module reads. */
interface Aggregated {
  latency: { mean: number; p50: number; p90: number; p99: number; max: number; totalCount: number };
  requests: { total: number };
  statusCodeStats: Record<string, { count: number }>;
  non2xx: number; errors: number; timeouts: number;
}
const aggregate = (autocannon as unknown as { aggregateResult(results: unknown[], opts: object): Aggregated }).aggregateResult;

/** Runs `plan` to the end and merges every process's figures. @throws when a generator fails. */
export async function runLoad(plan: RunPlan): Promise<RunResult> {
  const jobs = planJobs(plan);
  const results = (await Promise.all(jobs.map(runJob))).flat();
  const connections = jobs.reduce((n, j) => n + j.slots.reduce((m, s) => m + s.connections, 0), 0);
  const a = aggregate(results, { url: plan.urls, connections });
  const status: Record<string, number> = {};
  for (const [code, s] of Object.entries(a.statusCodeStats)) status[code] = s.count;
  const requests = Object.values(status).reduce((x, y) => x + y, 0);
  const round = (x: number) => Math.round(x * 100) / 100;
  // Each instance counts answers until its first sample tick after the duration: its rate is its
  // answers over its own measured time, and the instances ran side by side.
  const rps = (results as { totalCompletedRequests: number; duration: number }[])
    .reduce((n, r) => n + (r.duration > 0 ? r.totalCompletedRequests / r.duration : 0), 0);
  return {
    target_rps: plan.rate, connections, workers: jobs.length, duration_s: plan.durationS,
    requests, rps: round(rps),
    latency_ms: { mean: round(a.latency.mean), p50: a.latency.p50, p90: a.latency.p90, p99: a.latency.p99, max: a.latency.max },
    status, non_2xx: a.non2xx, errors: { connection: a.errors - a.timeouts, timeouts: a.timeouts },
  };
}
