/**
 * The victim's steady traffic during the hostile-input system test, run in a worker thread so
 * its latencies are measured on an event loop of its own (the control plane shares the test's
 * main thread, and a stall there must not be mistaken for a slow node, nor hide one).
 *
 * workerData: {@link LoadOptions}. Messages in: `{type: 'begin'}` starts the loops (project B's
 * `POST /flags?v=2` through the node, and `GET /api/projects/B/feature_flags/` on the control
 * plane, rotating over several personal API keys so the per-key rate limit is never reached);
 * `{type: 'end'}` stops issuing, waits for the requests in flight (each bounded by
 * `requestTimeoutMs`) and posts a {@link LoadReport}.
 */
import { parentPort, workerData } from 'node:worker_threads';

/** What the worker drives. */
export interface LoadOptions {
  nodeUrl: string;
  projectToken: string;
  apiUrl: string;
  projectId: number;
  /** Personal API keys of project B, used in turn. */
  apiKeys: string[];
  flagsLoops: number;
  apiLoops: number;
  /** Pause between two requests of one loop, in ms. */
  pauseMs: number;
  requestTimeoutMs: number;
}

/** Latencies (ms) of the requests started in one window, and their failures. */
export interface SeriesReport { latencies: number[]; errors: string[] }
/** One window's traffic. */
export interface LoadReport { type: 'report'; flags: SeriesReport; api: SeriesReport }

const opts = workerData as LoadOptions;
let running = false;
let inFlight: Promise<void>[] = [];
let flags: SeriesReport = { latencies: [], errors: [] };
let api: SeriesReport = { latencies: [], errors: [] };
let counter = 0;

/** Times one request into `into`; a non-2xx answer or a network error is an error. */
async function timed(into: () => SeriesReport, send: () => Promise<Response>): Promise<void> {
  const started = performance.now();
  try {
    const res = await send();
    await res.arrayBuffer();
    into().latencies.push(performance.now() - started);
    if (res.status < 200 || res.status > 299) into().errors.push(`HTTP ${res.status}`);
  } catch (e) {
    into().latencies.push(performance.now() - started);
    into().errors.push((e as Error).name === 'TimeoutError' ? `timeout ${opts.requestTimeoutMs} ms` : (e as Error).message);
  }
}

function flagsRequest(): Promise<Response> {
  const n = counter++;
  return fetch(`${opts.nodeUrl}/flags?v=2`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: opts.projectToken, distinct_id: `victim-${n}`, person_properties: { email: `victim-${n}@b.example` } }),
    signal: AbortSignal.timeout(opts.requestTimeoutMs),
  });
}

function apiRequest(): Promise<Response> {
  const key = opts.apiKeys[counter++ % opts.apiKeys.length]!;
  return fetch(`${opts.apiUrl}/api/projects/${opts.projectId}/feature_flags/`, {
    headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(opts.requestTimeoutMs),
  });
}

async function loop(into: () => SeriesReport, send: () => Promise<Response>): Promise<void> {
  while (running) {
    await timed(into, send);
    await new Promise((r) => setTimeout(r, opts.pauseMs));
  }
}

parentPort!.on('message', async (m: { type: string }) => {
  if (m.type === 'begin') {
    flags = { latencies: [], errors: [] };
    api = { latencies: [], errors: [] };
    running = true;
    const f = flags;
    const a = api;
    inFlight = [
      ...Array.from({ length: opts.flagsLoops }, () => loop(() => f, flagsRequest)),
      ...Array.from({ length: opts.apiLoops }, () => loop(() => a, apiRequest)),
    ];
  } else if (m.type === 'end') {
    running = false;
    await Promise.all(inFlight);
    const report: LoadReport = { type: 'report', flags, api };
    parentPort!.postMessage(report);
  }
});
