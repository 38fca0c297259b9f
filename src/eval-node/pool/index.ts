/**
 * Where /flags jobs are evaluated (DESIGN.md "Hot path"; `SWITCHYARD_EVAL_THREADS`):
 *
 * - **inline** (`evalThreads = 0`): on the IO thread, synchronously, with the trusted
 *   {@link FlagsEngine}; the answer is returned directly (no promise on the hot path).
 * - **pool** (`evalThreads > 0`): a Piscina pool running `workers/evaluate.ts`. Jobs arriving
 *   during one event-loop turn are collected and flushed by one `setImmediate` as at most
 *   `threads` tasks, so a pool round trip (tens of µs) is paid per batch, not per request. Each
 *   worker opens the same LMDB environment read-only and keeps its own compiled cache, so only
 *   the job and the answer string cross threads. A task (one batch) has a time limit: past it
 *   Piscina terminates the worker and starts another, and the batch's requests are rejected
 *   with a 503 `evaluation_timeout` ApiError (the HTTP layer sends it).
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import { WORKERS_DIR } from '../../paths.js';
import type { FlagsEngine } from './engine.js';
import type { FlagsJob, JobAnswer } from './job.js';
import { errors, type ApiError } from '../../errors.js';

export type { FlagsJob, JobAnswer, ResponseShape } from './job.js';
export { FlagsEngine } from './engine.js';

/** Evaluates jobs; `evaluate` answers synchronously in inline mode and with a promise in pool mode. */
export interface Evaluator {
  readonly mode: 'inline' | 'pool';
  evaluate(job: FlagsJob): JobAnswer | Promise<JobAnswer>;
  /** Jobs waiting for a worker (collected or queued in Piscina). */
  queueSize(): number;
  close(): Promise<void>;
}

/** The inline evaluator over the IO thread's engine. */
export function inlineEvaluator(engine: FlagsEngine): Evaluator {
  return {
    mode: 'inline',
    // Bytes in the engine's reused buffer: the handler sends them before the next evaluation.
    evaluate: (job) => engine.runBytes(job),
    queueSize: () => 0,
    close: async () => {},
  };
}

/** What a worker needs to start (passed as Piscina `workerData`). */
export interface WorkerInit {
  /** LMDB environment of the node store, opened read-only by the worker. */
  storePath: string;
  /** GeoLite2 bytes in shared memory, or null for no GeoIP. */
  geoipBytes: Uint8Array | null;
}

/** Largest batch sent as one task; bigger turns are split so workers share the work. */
export const MAX_BATCH_JOBS = 256;

interface Pending {
  job: FlagsJob;
  resolve: (answer: JobAnswer) => void;
  reject: (err: ApiError) => void;
}

/** Default {@link poolEvaluator} task time limit, in milliseconds (config: SWITCHYARD_EVAL_TASK_TIMEOUT_MS). */
export const DEFAULT_TASK_TIMEOUT_MS = 2_000;

/**
 * A Piscina-backed evaluator with per-turn micro-batching; see the module doc. `fallback` (the IO
 * thread's engine) answers a job the pool could not take (for example a body too deeply nested
 * to structured-clone), so pool and inline answers stay identical. `taskTimeoutMs` bounds one
 * task; the promise of each of its jobs then rejects with ApiError 503 `evaluation_timeout`.
 */
export function poolEvaluator(threads: number, init: WorkerInit, fallback?: FlagsEngine, taskTimeoutMs: number = DEFAULT_TASK_TIMEOUT_MS): Evaluator {
  const pool = new Piscina({
    filename: path.join(WORKERS_DIR, 'evaluate.js'),
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
    workerData: init,
  });
  let pending: Pending[] = [];
  let scheduled = false;

  const runChunk = (chunk: Pending[]): void => {
    let task: Promise<JobAnswer[]>;
    try {
      task = pool.run(chunk.map((p) => p.job), { signal: AbortSignal.timeout(taskTimeoutMs) });
    } catch (e) {
      task = Promise.reject(e);
    }
    task.then(
      (answers: JobAnswer[]) => { for (let i = 0; i < chunk.length; i++) chunk[i]!.resolve(answers[i] ?? null); },
      // A task fails as a whole (e.g. one request too deeply nested to structured-clone): retry
      // its jobs one by one so only the offending request answers 500, not its batch-mates.
      // A task that ran out of time is not retried: Piscina has replaced its worker, and its
      // requests answer 503 (retry) rather than wait behind it.
      (err: unknown) => {
        if ((err as { name?: string } | null)?.name === 'AbortError') {
          for (const p of chunk) p.reject(errors.unavailable('evaluation_timeout', `Flag evaluation took longer than ${taskTimeoutMs} ms; retry shortly.`));
          return;
        }
        if (chunk.length === 1) chunk[0]!.resolve(fallback ? fallback.run(chunk[0]!.job) : null);
        else for (const p of chunk) runChunk([p]);
      },
    );
  };

  const flush = (): void => {
    scheduled = false;
    const batch = pending;
    pending = [];
    // Split so that every worker gets a share of a large turn, but never more than MAX_BATCH_JOBS.
    const chunks = Math.max(Math.min(threads, batch.length), Math.ceil(batch.length / MAX_BATCH_JOBS));
    const size = Math.ceil(batch.length / chunks);
    for (let i = 0; i < batch.length; i += size) runChunk(batch.slice(i, i + size));
  };

  return {
    mode: 'pool',
    evaluate(job: FlagsJob): Promise<JobAnswer> {
      return new Promise((resolve, reject) => {
        pending.push({ job, resolve, reject });
        if (!scheduled) { scheduled = true; setImmediate(flush); }
      });
    },
    queueSize: () => pending.length + pool.queueSize,
    close: () => pool.destroy(),
  };
}
