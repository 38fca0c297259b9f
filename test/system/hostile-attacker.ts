/**
 * Many attack requests at once for the hostile-input system test, sent from a worker thread so
 * the attacker's own client work (hundreds of `fetch` calls) does not run on the event loop of
 * the control plane it attacks (which shares the test's main thread): the loop delay and B's
 * latencies measured then are what the control plane does, not what the attacker costs.
 *
 * One thread serves the whole file ({@link startAttacker}), started before the first case, so no
 * case pays for starting a thread (loading its modules) inside its measured window. Messages in:
 * an {@link AttackJob}; out: `{calls}`, one {@link AttackCall} per request, in order. Imported on
 * the main thread, this module only lends {@link timedFetch} and {@link startAttacker}.
 */
import { Worker, parentPort, workerData } from 'node:worker_threads';

/** One request to send. */
export interface AttackRequest { url: string; method: string; headers: Record<string, string>; body?: string }
/** The requests, how many at a time, and each one's client deadline in ms. */
export interface AttackJob { requests: AttackRequest[]; width: number; deadlineMs: number }
/** How one request ended: its status (null without an answer), time in ms, body (JSON when it parses), error. */
export interface AttackCall { status: number | null; ms: number; body: unknown; error: string | null }

/** The attacker thread: sends one job at a time. */
export interface Attacker {
  /** Sends `job`'s requests; resolves with every call's outcome, in order. @throws when the thread fails. */
  send(job: AttackJob): Promise<AttackCall[]>;
  close(): Promise<void>;
}

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

/** Sends `job`'s requests, `job.width` at a time. */
async function run(job: AttackJob): Promise<AttackCall[]> {
  const calls: AttackCall[] = new Array(job.requests.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(job.width, job.requests.length) }, async () => {
    while (next < job.requests.length) {
      const i = next++;
      const r = job.requests[i]!;
      calls[i] = await timedFetch(r.url, { method: r.method, headers: r.headers, body: r.body }, job.deadlineMs);
    }
  }));
  return calls;
}

/** Starts the attacker thread; resolves once it is ready to take a job. */
export async function startAttacker(): Promise<Attacker> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { attacker: true } });
  let failure: Error | null = null;
  let pending: { resolve: (c: AttackCall[]) => void; reject: (e: Error) => void } | null = null;
  const fail = (e: Error) => { failure ??= e; pending?.reject(e); pending = null; };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`the attacker thread exited (${code})`)));
  worker.on('message', (m: { ready?: true; calls?: AttackCall[] }) => {
    if (m.calls) { pending?.resolve(m.calls); pending = null; }
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return {
    send(job) {
      if (failure) return Promise.reject(failure);
      if (pending) return Promise.reject(new Error('the attacker thread is busy with another job'));
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        worker.postMessage(job);
      });
    },
    async close() { await worker.terminate(); },
  };
}

if (parentPort && (workerData as { attacker?: boolean } | null)?.attacker === true) {
  const port = parentPort;
  port.on('message', (job: AttackJob) => { void run(job).then((calls) => port.postMessage({ calls })); });
  port.postMessage({ ready: true });
}
