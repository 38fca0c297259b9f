/**
 * The victim's steady traffic during the hostile-input system test, run in a worker thread so
 * its latencies are measured on an event loop of its own (the control plane shares the test's
 * main thread, and a stall there must not be mistaken for a slow node, nor hide one).
 *
 * workerData: {@link LoadOptions}. Messages in: `{type: 'begin'}` starts the loops (project B's
 * `POST /flags?v=2` through the node, and `GET /api/projects/B/feature_flags/` on the control
 * plane, rotating over several personal API keys so the per-key rate limit is never reached);
 * `{type: 'end'}` stops issuing, waits for the requests in flight (each bounded by
 * `requestTimeoutMs`) and posts a {@link LoadReport}. Requests go through `node:http` on connections
 * kept alive through a window (one per loop; test/support/keep-alive.ts): a request costs this thread a fraction of what
 * `fetch` does, so the machine's cores go to the servers under test.
 *
 * Pacing: each loop pauses `pauseMs` between requests until its series holds `denseSamples` in
 * the window, then `sparsePauseMs`. A short window gets all the samples it can; a long one (a
 * held connection, a query run to its deadline) does not pile up thousands that add nothing to a
 * p99 already resting on a hundred or more. A stall still catches every loop's request in flight.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { keepAliveClient, KeepAliveTimeout, type KeepAliveClient } from '../support/keep-alive.js';

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
  /** Pause between two requests of one loop, in ms, until its series has `denseSamples` in the window. */
  pauseMs: number;
  /** Samples per series (`flags`, `api`) in one window after which its loops pause `sparsePauseMs`. */
  denseSamples: { flags: number; api: number };
  /** Pause between two requests of one loop once its series has its `denseSamples`, in ms. */
  sparsePauseMs: number;
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

/**
 * Kept-alive connections, at most one per loop, for one window: made at `begin` and closed at
 * `end`, so no connection sits idle between windows for a server's idle timeout to close under it.
 */
let client: KeepAliveClient = keepAliveClient(1);

/** Times one request into `into`; a non-2xx answer or a network error is an error. */
async function timed(into: () => SeriesReport, request: () => Promise<number>): Promise<void> {
  const started = performance.now();
  try {
    const status = await request();
    into().latencies.push(performance.now() - started);
    if (status < 200 || status > 299) into().errors.push(`HTTP ${status}`);
  } catch (e) {
    into().latencies.push(performance.now() - started);
    into().errors.push(e instanceof KeepAliveTimeout ? `timeout ${opts.requestTimeoutMs} ms` : (e as Error).message);
  }
}

function flagsRequest(): Promise<number> {
  const n = counter++;
  return client.request('POST', `${opts.nodeUrl}/flags?v=2`, {
    body: { api_key: opts.projectToken, distinct_id: `victim-${n}`, person_properties: { email: `victim-${n}@b.example` } }, timeoutMs: opts.requestTimeoutMs,
  }).then((r) => r.status);
}

function apiRequest(): Promise<number> {
  const key = opts.apiKeys[counter++ % opts.apiKeys.length]!;
  return client.request('GET', `${opts.apiUrl}/api/projects/${opts.projectId}/feature_flags/`, {
    headers: { authorization: `Bearer ${key}` }, timeoutMs: opts.requestTimeoutMs,
  }).then((r) => r.status);
}

async function loop(into: () => SeriesReport, request: () => Promise<number>, dense: number): Promise<void> {
  while (running) {
    await timed(into, request);
    await new Promise((r) => setTimeout(r, into().latencies.length < dense ? opts.pauseMs : opts.sparsePauseMs));
  }
}

parentPort!.on('message', async (m: { type: string }) => {
  if (m.type === 'begin') {
    flags = { latencies: [], errors: [] };
    api = { latencies: [], errors: [] };
    running = true;
    client = keepAliveClient(opts.flagsLoops + opts.apiLoops);
    const f = flags;
    const a = api;
    inFlight = [
      ...Array.from({ length: opts.flagsLoops }, () => loop(() => f, flagsRequest, opts.denseSamples.flags)),
      ...Array.from({ length: opts.apiLoops }, () => loop(() => a, apiRequest, opts.denseSamples.api)),
    ];
  } else if (m.type === 'end') {
    running = false;
    await Promise.all(inFlight);
    client.close();
    const report: LoadReport = { type: 'report', flags, api };
    parentPort!.postMessage(report);
  }
});
