/**
 * Where /flags jobs are evaluated (DESIGN.md "Hot path"; `SWITCHYARD_EVAL_THREADS`):
 *
 * - **inline** (`evalThreads = 0`): on the IO thread, synchronously, with the trusted
 *   {@link FlagsEngine}; the answer is returned directly (no promise on the hot path).
 * - **pool** (`evalThreads > 0`): a Piscina pool running `workers/evaluate.ts`. Jobs arriving
 *   during one event-loop turn are collected and flushed by one `setImmediate` as at most
 *   `threads` tasks, so a pool round trip (tens of µs) is paid per batch, not per request. Each
 *   worker opens the same LMDB environment read-only and keeps its own compiled cache, so only
 *   the job and the answer string cross threads.
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import { WORKERS_DIR } from '../../paths.js';
import type { FlagsEngine } from './engine.js';
import type { FlagsJob, JobAnswer } from './job.js';

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
}

/**
 * A Piscina-backed evaluator with per-turn micro-batching; see the module doc. `fallback` (the IO
 * thread's engine) answers a job the pool could not take (for example a body too deeply nested
 * to structured-clone), so pool and inline answers stay identical.
 */
export function poolEvaluator(threads: number, init: WorkerInit, fallback?: FlagsEngine): Evaluator {
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
      task = pool.run(chunk.map((p) => p.job));
    } catch (e) {
      task = Promise.reject(e);
    }
    task.then(
      (answers: JobAnswer[]) => { for (let i = 0; i < chunk.length; i++) chunk[i]!.resolve(answers[i] ?? null); },
      // A task fails as a whole (e.g. one request too deeply nested to structured-clone): retry
      // its jobs one by one so only the offending request answers 500, not its batch-mates.
      () => {
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
      return new Promise((resolve) => {
        pending.push({ job, resolve });
        if (!scheduled) { scheduled = true; setImmediate(flush); }
      });
    },
    queueSize: () => pending.length + pool.queueSize,
    close: () => pool.destroy(),
  };
}
