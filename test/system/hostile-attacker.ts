/**
 * Many attack requests at once for the hostile-input system test, sent from a worker thread so
 * the attacker's own client work (hundreds of `fetch` calls) does not run on the event loop of
 * the control plane it attacks (which shares the test's main thread): the loop delay and B's
 * latencies measured then are what the control plane does, not what the attacker costs.
 *
 * workerData: {@link AttackJob}; posts one {@link AttackCall} per request, in order, as a
 * `{calls}` message, then ends. Imported on the main thread, it only lends {@link timedFetch}.
 */
import { parentPort, workerData } from 'node:worker_threads';

/** One request to send. */
export interface AttackRequest { url: string; method: string; headers: Record<string, string>; body?: string }
/** The requests, how many at a time, and each one's client deadline in ms. */
export interface AttackJob { requests: AttackRequest[]; width: number; deadlineMs: number }
/** How one request ended: its status (null without an answer), time in ms, body (JSON when it parses), error. */
export interface AttackCall { status: number | null; ms: number; body: unknown; error: string | null }

/** `fetch` with a client deadline (`deadlineMs`), as an {@link AttackCall}: never throws. */
export async function timedFetch(url: string, init: RequestInit, deadlineMs: number): Promise<AttackCall> {
  const started = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(deadlineMs) });
    const text = await res.text();
    let body: unknown;
    try { body = JSON.parse(text); } catch { body = text; }
    return { status: res.status, ms: performance.now() - started, body, error: null };
  } catch (e) {
    return { status: null, ms: performance.now() - started, body: undefined, error: (e as Error).name === 'TimeoutError' ? 'client deadline' : (e as Error).message };
  }
}

if (parentPort) {
  const job = workerData as AttackJob;
  const calls: AttackCall[] = new Array(job.requests.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(job.width, job.requests.length) }, async () => {
    while (next < job.requests.length) {
      const i = next++;
      const r = job.requests[i]!;
      calls[i] = await timedFetch(r.url, { method: r.method, headers: r.headers, body: r.body }, job.deadlineMs);
    }
  }));
  parentPort.postMessage({ calls });
}
