/**
 * The `client` host's traffic: real posthog-node at a constant rate against the load balancer,
 * `/flags` (getAllFlags, remote evaluation) and capture (batched `/batch/`), no SDK retries so
 * every failed request is seen. Counts through the SDK's `fetch` option and reports one JSON line
 * on stdout every 250 ms: cumulative counts, the uuids of events a 200 acknowledged since the
 * last line, and each failed request with its time. SIGTERM: stop, flush, report, exit.
 *
 *   node client.js <base url> <project key> <flags per s> <events per s>
 */
import { randomUUID } from 'node:crypto';
import { PostHog } from 'posthog-node';

const [base, key, flagsRate, eventsRate] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 20), Number(process.argv[5] ?? 40)];

const counts = { flagsOk: 0, flagsFail: 0, batchOk: 0, batchFail: 0, eventsSent: 0, inflight: 0, maxInflight: 0 };
let acked: string[] = [];
let failures: { t: number; path: string; what: string }[] = [];

async function countingFetch(url: string, options: any): Promise<any> {
  const path = new URL(url).pathname;
  const isBatch = path.startsWith('/batch');
  counts.inflight++;
  counts.maxInflight = Math.max(counts.maxInflight, counts.inflight);
  try {
    const res = await fetch(url, options);
    const ok = res.status === 200;
    if (isBatch) {
      if (ok) {
        counts.batchOk++;
        const body = JSON.parse(String(options.body)) as { batch: { uuid: string }[] };
        for (const e of body.batch) acked.push(e.uuid);
      } else counts.batchFail++;
    } else if (path.startsWith('/flags')) {
      if (ok) counts.flagsOk++; else counts.flagsFail++;
    }
    if (!ok) failures.push({ t: Date.now(), path, what: `HTTP ${res.status}` });
    return res;
  } catch (e) {
    if (isBatch) counts.batchFail++; else counts.flagsFail++;
    failures.push({ t: Date.now(), path, what: String((e as Error).cause ?? (e as Error).message) });
    throw e;
  } finally {
    counts.inflight--;
  }
}

const ph = new PostHog(key, {
  host: base, flushAt: 10, flushInterval: 200, fetchRetryCount: 0, requestTimeout: 5_000,
  disableCompression: true, disableGeoip: true, fetch: countingFetch as any,
});
ph.on('error', () => { /* counted in countingFetch */ });

function report(): void {
  process.stdout.write(`${JSON.stringify({ t: Date.now(), ...counts, acked, failures })}\n`);
  acked = [];
  failures = [];
  counts.maxInflight = counts.inflight;
}

let n = 0;
const flagsTimer = setInterval(() => {
  ph.getAllFlags(`user-${n++ % 500}`).catch(() => {});
}, 1000 / flagsRate);
const eventsTimer = setInterval(() => {
  counts.eventsSent++;
  ph.capture({ distinctId: `user-${n % 500}`, event: 'cluster_tick', uuid: randomUUID(), properties: { n } });
}, 1000 / eventsRate);
const reportTimer = setInterval(report, 250);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(flagsTimer);
  clearInterval(eventsTimer);
  await ph.shutdown(10_000).catch(() => {});
  clearInterval(reportTimer);
  report();
  process.stdout.write('{"done":true}\n', () => process.exit(0));
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
