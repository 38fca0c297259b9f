/**
 * `make bench-capture`: how many capture requests per second does a node accept DURABLY
 * (decode + validate + LMDB outbox append, committed and flushed before the answer), and what
 * does durability cost against the same-run baseline of decode + validate with no outbox?
 *
 * Workload: posthog-js style `/batch/` bodies of BENCH_EVENTS events (default 10, ~300 bytes
 * each), gzip'd when BENCH_GZIP=1; BENCH_CONCURRENCY requests in flight (default 64: lmdb-js
 * commits every write queued in one event turn in one transaction, so concurrency amortises
 * the fsync); each mode runs BENCH_DURATION_S seconds (default 5) after a 1 s warm-up. No HTTP:
 * this isolates what src/eval-node/capture adds to a request. Same-run floor: JSON.parse(body).
 *
 * Current figures beside their same-run floors: docs/benchmarks.md (history in git).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { handleCapture, type CaptureStore } from '../src/eval-node/capture/handler.js';
import { Outbox } from '../src/eval-node/capture/outbox.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const GZIP = process.env.BENCH_GZIP === '1';
const TOKEN = 'phc_bench_capture_token_0000000';

function body(i: number): Buffer {
  const batch = Array.from({ length: EVENTS }, (_, j) => ({
    event: j % 3 === 0 ? '$feature_flag_called' : '$pageview', distinct_id: `user-${i % 10_000}`,
    properties: { $feature_flag: 'beta', $feature_flag_response: true, $current_url: 'https://example.com/a/b', $lib: 'web', $lib_version: '1.200.0', n: j },
    timestamp: new Date().toISOString(),
  }));
  const raw = Buffer.from(JSON.stringify({ api_key: TOKEN, batch, sent_at: new Date().toISOString() }));
  return GZIP ? zlib.gzipSync(raw) : raw;
}

async function run(name: string, store: CaptureStore, bodies: Buffer[], seconds: number): Promise<number> {
  const headers = { 'content-type': 'application/json' };
  let done = 0;
  let failed = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async (w: number) => {
    for (let i = w; performance.now() < end; i += CONCURRENCY) {
      const r = await handleCapture('/batch/', '', headers, bodies[i % bodies.length]!, store);
      if (r.status === 200) done++; else failed++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  const rate = done / ((performance.now() - t0) / 1000);
  if (name) console.log(`${name.padEnd(34)} ${rate.toFixed(0).padStart(8)} requests/s  ${(rate * EVENTS).toFixed(0).padStart(9)} events/s${failed ? `  (${failed} failed)` : ''}`);
  return rate;
}

/** Same-run floor: parsing the (uncompressed) body and nothing else, requests/s. */
function jsonParseRate(bodies: Buffer[], seconds: number): number {
  const texts = bodies.map((b) => (GZIP ? zlib.gunzipSync(b) : b).toString('utf8'));
  let n = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 100; i++) JSON.parse(texts[(n + i) % texts.length]!);
    n += 100;
  }
  return n / ((performance.now() - t0) / 1000);
}

async function main(): Promise<void> {
  console.log(`bench-capture: Node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`${EVENTS} events/request, ${GZIP ? 'gzip' : 'plain JSON'}, concurrency ${CONCURRENCY}, ${DURATION_S} s per mode`);
  const bodies = Array.from({ length: 256 }, (_, i) => body(i));
  const baseline: CaptureStore = { projectIdForToken: () => 1, append: async () => {} };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-bench-outbox-'));
  const outbox = Outbox.open({ path: dir, maxBytes: 64 * 1024 ** 3 }); // 64 GiB: far more than a run appends
  const durable: CaptureStore = { projectIdForToken: () => 1, append: (e) => outbox.append(e) };
  try {
    await run('', baseline, bodies, 1);
    await run('', durable, bodies, 1);
    const parse = jsonParseRate(bodies, DURATION_S);
    console.log(`${'JSON.parse(body) only'.padEnd(34)} ${parse.toFixed(0).padStart(8)} requests/s`);
    const base = await run('decode + validate (baseline)', baseline, bodies, DURATION_S);
    const dur = await run('+ durable outbox append (fsync)', durable, bodies, DURATION_S);
    console.log(`durability costs ${((1 - dur / base) * 100).toFixed(0)} % of baseline throughput; outbox holds ${(outbox.bytes / 1e6).toFixed(1)} MB in ${outbox.entries} entries`);
  } finally {
    await outbox.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
