/**
 * `make bench-capture`, part 2: capture through the whole system. How many events per second
 * does one node ACCEPT durably over HTTP (`POST /batch/`, each answered only after its events
 * are flushed to the LMDB outbox), how fast are they DRAINED to Postgres (outbox → gRPC Ingest
 * → one transaction per batch → acknowledged → deleted), and how does the outbox size move?
 * Target (issue): ≥ 20,000 events/s accepted on this machine.
 *
 * Real parts: a throw-away embedded Postgres, a control plane (`startControlPlane`), a node
 * (`startNodeService`), autocannon in a CHILD process on 127.0.0.1 (so it does not share the
 * server's event loop). Every event gets a server-assigned uuid, so every accepted event must
 * reach Postgres exactly once; the run checks that count. Same-run baseline: the accept rate
 * itself — the drain rate is printed as a ratio of it. Knobs (env): BENCH_DURATION_S (10),
 * BENCH_CONNECTIONS (32), BENCH_EVENTS (10 per request), BENCH_TIMEOUT_S (180).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { connect } from '../src/control-plane/db/connect.js';
import { startEmbeddedPostgres } from '../src/control-plane/db/embedded.js';
import { startControlPlane } from '../src/control-plane/index.js';
import { startNodeService } from '../src/eval-node/service.js';
import { newPersonalApiKey } from '../src/control-plane/keys/tokens.js';
import { stablePort } from '../test/support/ports.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 180) * 1000;
const TOKEN = 'phc_bench_capture_drain_000000000001';

/** posthog-node style `/batch/` bodies (events without uuid: the node assigns one). */
function bodies(count: number): string[] {
  return Array.from({ length: count }, (_, i) => JSON.stringify({
    api_key: TOKEN,
    batch: Array.from({ length: EVENTS }, (_, j) => ({
      event: j % 3 === 0 ? '$feature_flag_called' : 'page_viewed',
      distinct_id: `user-${(i * EVENTS + j) % 5000}`,
      properties: { $feature_flag: 'beta', $feature_flag_response: true, $current_url: 'https://example.com/a', n: j },
    })),
  }));
}

/** Child side: autocannon against `url`; prints `{ok, non2xx, errors}` as JSON. */
async function loadChild(url: string): Promise<void> {
  const { default: autocannon } = await import('autocannon');
  const requests = bodies(500).map((body) => ({ method: 'POST' as const, headers: { 'content-type': 'application/json' }, body }));
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, requests });
  process.stdout.write(JSON.stringify({ ok: r['2xx'], non2xx: r.non2xx, errors: r.errors + r.timeouts, p99: r.latency.p99 }) + '\n');
}

function load(url: string): Promise<{ ok: number; non2xx: number; errors: number; p99: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--load', url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}`));
      try { resolve(JSON.parse(out.trim().split('\n').pop()!)); } catch (e) { reject(e); }
    });
  });
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-capture-'));
  fs.chmodSync(tmp, 0o777);
  const cluster = await startEmbeddedPostgres({ dataDir: path.join(tmp, 'pg'), port: await stablePort(), persistent: false });
  const admin = connect(cluster.adminUrl, { max: 1 });
  await admin.unsafe('CREATE DATABASE bench_capture');
  await admin.end();
  const log = createLogger('silent');
  const config = testConfig({ dataDir: tmp, grpcPort: 0, bootstrapProjectApiKey: TOKEN, bootstrapPersonalApiKey: newPersonalApiKey() });
  const cp = await startControlPlane(config, log, cluster.urlFor('bench_capture'));
  const node = await startNodeService(testConfig({ ...config, dataDir: path.join(tmp, 'node'), controlPlane: `127.0.0.1:${cp.grpc!.port}` }), log);
  const started = Date.now();
  while (!node.node.store.hasCompleteSnapshot()) {
    if (Date.now() - started > TIMEOUT_MS) throw new Error('node not ready');
    await new Promise((r) => setTimeout(r, 20));
  }
  const countEvents = async () => Number((await cp.sql<{ n: string }[]>`SELECT count(*) AS n FROM events`)[0]!.n);
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu?'} ×${os.availableParallelism()}; ${CONNECTIONS} connections, ${EVENTS} events per /batch/ request, ${DURATION_S} s`);
  const timeline: string[] = [];
  const t0 = Date.now();
  const sampler = setInterval(() => {
    timeline.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${(node.capture.outbox.bytes / 1e6).toFixed(1)} MB/${node.capture.outbox.entries}`);
  }, 1000);
  try {
    const r = await load(`${node.http.url}/batch/`);
    const loadEnd = Date.now();
    const accepted = r.ok * EVENTS;
    // Wait for the outbox to empty: requests still in flight when autocannon stopped (at most one
    // per connection) were accepted by the node but not counted by the generator.
    let stored = await countEvents();
    while (stored < accepted || node.capture.outbox.entries > 0) {
      if (Date.now() - loadEnd > TIMEOUT_MS) throw new Error(`only ${stored} of ${accepted} events reached Postgres`);
      await new Promise((res) => setTimeout(res, 100));
      stored = await countEvents();
    }
    const drainedAt = Date.now();
    clearInterval(sampler);
    const acceptRate = accepted / DURATION_S;
    const drainRate = stored / ((drainedAt - t0) / 1000);
    console.log(`accepted durably:  ${Math.round(acceptRate).toLocaleString('en')} events/s (${r.ok} requests; non-2xx ${r.non2xx}, errors ${r.errors}; p99 ${r.p99} ms)  target ≥ 20,000`);
    const uncounted = stored - accepted;
    console.log(`drained to Postgres: ${stored} events (${accepted} counted by the generator + ${uncounted} from requests in flight at its deadline); ${Math.round(drainRate).toLocaleString('en')} events/s over ${((drainedAt - t0) / 1000).toFixed(1)} s `
      + `(outbox empty ${((drainedAt - loadEnd) / 1000).toFixed(1)} s after the load stopped); drain / accept ratio ${(drainRate / acceptRate).toFixed(2)}`);
    const [dupes] = await cp.sql<{ n: string }[]>`SELECT count(*) - count(DISTINCT uuid) AS n FROM events`;
    if (uncounted < 0 || uncounted > CONNECTIONS * EVENTS || Number(dupes!.n) !== 0) {
      throw new Error(`expected ${accepted}..${accepted + CONNECTIONS * EVENTS} distinct events, Postgres holds ${stored} (${dupes!.n} duplicate uuids)`);
    }
    console.log(`outbox size (MB/entries) each second: ${timeline.join(', ')}`);
  } finally {
    clearInterval(sampler);
    await node.close();
    await cp.close();
    await cluster.stop().catch(() => {});
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--load') {
  loadChild(process.argv[3]!).then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
} else {
  main().then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
}
