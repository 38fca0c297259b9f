/**
 * The benches' HTTP load generators (`make bench`): autocannon in a child process (this file run
 * with `--load`, so the generator never shares the measured server's event loop), an open-loop
 * paced load for latency at a fixed rate, and Debian's wrk when installed. Every run is bounded
 * by its duration and reports one {@link LoadResult}.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { prng, USERS, workloadBody } from './flags-workload.js';

/** Seconds of each measured run (BENCH_DURATION_S). */
export const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
/** Seconds of the warm-up before each run (BENCH_WARMUP_S). */
export const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 3);
/** Keep-alive connections of every run (BENCH_CONNECTIONS). */
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

/** Distinct request bodies (users) each connection cycles through. */
const BODIES = 2_000;

/** One load run's figures (from the autocannon child). */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
  /** CPU the load generator itself used (user + system, µs), when it reports it. */
  genCpuUs?: number;
}

/**
 * Runs autocannon in a child process against `url` (warm-up first unless `rate` runs), POSTing
 * `bodies` in turn, or 2,000 bodies of the 50-flag workload when none are given.
 */
export function load(url: string, durationS: number, rate?: number, bodies?: readonly string[]): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    let bodiesFile: string | undefined;
    if (bodies) {
      bodiesFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bodies-')), 'bodies.txt');
      fs.writeFileSync(bodiesFile, `${bodies.join('\n')}\n`);
    }
    const args = [fileURLToPath(import.meta.url), '--load', JSON.stringify({ url, durationS, rate, connections: CONNECTIONS, bodiesFile })];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (bodiesFile) fs.rmSync(path.dirname(bodiesFile), { recursive: true, force: true });
      if (code !== 0) return reject(new Error(`load generator exited with ${code}`));
      try { resolve(JSON.parse(out.trim().split('\n').pop()!)); } catch (e) { reject(e); }
    });
  });
}

/** Child side: autocannon with a random workload body per request. */
async function loadChild(opts: { url: string; durationS: number; rate?: number; connections: number; bodiesFile?: string }): Promise<void> {
  const { default: autocannon } = await import('autocannon');
  const rnd = prng(7);
  // Pre-built requests: autocannon serialises each once per connection and then only cycles
  // through them, which is several times cheaper than a setupRequest callback per request (the
  // generator, not the server, was the limit with one). Users are drawn at random from 100,000.
  const headers = { 'content-type': 'application/json', 'user-agent': 'posthog-node/5.0.0' };
  const bodies = opts.bodiesFile
    ? fs.readFileSync(opts.bodiesFile, 'utf8').split('\n').filter(Boolean)
    : Array.from({ length: BODIES }, () => workloadBody(Math.floor(rnd() * USERS)));
  const requests = bodies.map((body) => ({ method: 'POST' as const, headers, body }));
  if (opts.rate) return pacedLoad(opts.url, opts.durationS, opts.rate, opts.connections, requests.map((r) => r.body));
  const cpu0 = process.cpuUsage();
  const result = await autocannon({ url: opts.url, connections: opts.connections, duration: opts.durationS, requests });
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(JSON.stringify({
    rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99,
    non2xx: result.non2xx, errors: result.errors + result.timeouts, total: result.requests.total, genCpuUs: cpu.user + cpu.system,
  } satisfies LoadResult) + '\n');
}

/**
 * Open-loop load at a fixed rate (the half-load run): requests are due at start + i/rate and sent
 * over up to `connections` keep-alive sockets; latency is measured from the DUE time, so a stalled
 * server is not hidden by the generator waiting (no coordinated omission). autocannon's
 * `overallRate` was not used: it releases each second's budget in a burst, which measured the
 * burst's queueing rather than the server's latency at that rate. Latencies in ms with µs precision.
 */
async function pacedLoad(url: string, durationS: number, rate: number, connections: number, bodies: string[]): Promise<void> {
  const http = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(url);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  let inflight = 0;
  const start = performance.now();
  const endAt = start + durationS * 1000;
  const fire = (due: number, body: string): void => {
    inflight++;
    const req = http.request({
      agent, host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'posthog-node/5.0.0', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      if (res.statusCode !== 200) non2xx++;
      res.resume();
      res.on('end', () => { latencies.push(performance.now() - due); inflight--; });
    });
    req.on('error', () => { errors++; inflight--; });
    req.end(body);
  };
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const now = performance.now();
      const due = Math.min(Math.floor(((Math.min(now, endAt) - start) / 1000) * rate), Math.floor(durationS * rate));
      while (sent < due) { fire(start + (sent * 1000) / rate, bodies[sent % bodies.length]!); sent++; }
      if (now >= endAt && inflight === 0) { clearInterval(tick); resolve(); }
    }, 1);
  });
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (q: number) => Number((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(3));
  process.stdout.write(JSON.stringify({
    rps: latencies.length / durationS, p50: pct(0.5), p99: pct(0.99), non2xx, errors, total: latencies.length,
  } satisfies LoadResult) + '\n');
}

/** wrk, when installed (`make bench` installs Debian's): the IO-thread runs' driver. */
export const WRK = process.env.WRK_PATH && fs.existsSync(process.env.WRK_PATH) ? process.env.WRK_PATH : null;

/**
 * wrk's Lua script: POSTs the workload bodies in turn (read from `bodiesFile`, one per line) and
 * prints the figures as one JSON line when done.
 */
function wrkScript(bodiesFile: string): string {
  return `local bodies = {}
for line in io.lines(${JSON.stringify(bodiesFile)}) do bodies[#bodies + 1] = line end
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["User-Agent"] = "posthog-node/5.0.0"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[i])
end
done = function(summary, latency, requests)
  local non2xx = summary.errors.status
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format('WRK {"rps":%f,"p50":%f,"p99":%f,"non2xx":%d,"errors":%d,"total":%d}\\n',
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, non2xx, errors, summary.requests))
end
`;
}

/**
 * Runs wrk (one thread, CONNECTIONS connections) against `url` for `durationS` seconds, posting the
 * workload bodies (written once into `dir`); the generator's own CPU from bash's `times`.
 * @throws when wrk fails or prints no result.
 */
export function loadWrk(url: string, durationS: number, dir: string): Promise<LoadResult> {
  const bodiesFile = path.join(dir, 'wrk-bodies.txt');
  const script = path.join(dir, 'wrk.lua');
  if (!fs.existsSync(script)) {
    const rnd = prng(7);
    fs.writeFileSync(bodiesFile, Array.from({ length: BODIES }, () => workloadBody(Math.floor(rnd() * USERS))).join('\n') + '\n');
    fs.writeFileSync(script, wrkScript(bodiesFile));
  }
  return new Promise((resolve, reject) => {
    const cmd = `${WRK} -t1 -c${CONNECTIONS} -d${durationS}s -s ${script} ${url}; times`;
    const child = spawn('bash', ['-c', cmd], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('WRK '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (${code}): ${out}`));
      // `times` prints the shell's then its children's user and system time, as "XmY.ZZZs".
      const child = out.trim().split('\n').pop()!.split(/\s+/).map((t) => { const m = /(\d+)m([\d.]+)s/.exec(t); return m ? (Number(m[1]) * 60 + Number(m[2])) * 1e6 : 0; });
      resolve({ ...(JSON.parse(line.slice(4)) as LoadResult), genCpuUs: child[0]! + child[1]! });
    });
  });
}

if (process.argv[2] === '--load') {
  loadChild(JSON.parse(process.argv[3]!)).catch((e) => { console.error(e); process.exit(1); });
}
