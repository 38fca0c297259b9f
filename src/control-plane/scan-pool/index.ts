/**
 * The control plane's scan pool: matching filters against many persons (user_blast_radius,
 * cohort calculation, static cohort for a flag) or every flag against one person
 * (evaluation_reasons, my_flags) runs in Piscina workers (`workers/scan.ts`), never on the event
 * loop that serves the management API, ingestion and gRPC. A regex that needs the backtracking
 * engine may take 50 ms per person; here it costs a worker, not the process.
 *
 * Bounds, each configurable (src/config.ts):
 * - **deadline** per scan (`scanTimeoutMs` for a request, `cohortCalculationTimeoutMs` for a
 *   background calculation), waiting for a worker included. Workers check it before each row and
 *   stop; a task still running {@link TERMINATE_GRACE_MS} past it has its worker terminated.
 *   A scan past its deadline rejects with ApiError 504 (`errors.queryTimeout`, PostHog's answer
 *   when a query runs past its time limit: these are queries in PostHog).
 * - **per-project concurrency** (`scanProjectConcurrency`): a request scan past it is refused
 *   with 429 throttled (Retry-After: when the project's first running scan reaches its
 *   deadline); a background scan waits for a slot. Background scans of one key (one cohort)
 *   run one at a time, and one for a key already waiting is folded into the waiting one (a
 *   cohort patched ten times during a calculation is calculated once more, not ten times).
 * - **fair share**: a match task returns after {@link SLICE_MS} with how far it got, and its
 *   chunk of rows is sized to about one slice, so scans of different projects take turns on a
 *   worker.
 *
 * Callers stream rows from a Postgres cursor page by page into {@link Scan.match}; a scan holds
 * one page and one chunk at a time.
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import { WORKERS_DIR } from '../../paths.js';
import { errors } from '../../errors.js';
import type { EvaluationResult, StoredContext } from '../../evaluation/index.js';
import type { Sql } from '../db/connect.js';
import type { MatchAnswer, PlanRef, PrepareAnswer, ScanPlan, ScanTask } from './protocol.js';

export type { ScanPlan, PlanRef, PrepareAnswer } from './protocol.js';

/**
 * Rows of a scan's first match task. Later tasks carry about what the worker matched in one
 * slice (doubling while tasks finish early, at most {@link MAX_CHUNK_ROWS}): few round trips
 * for ordinary filters, and little cloned again when a slice ends early.
 */
export const CHUNK_ROWS = 256;
/** Most rows one match task carries. */
export const MAX_CHUNK_ROWS = 8_192;
/** Longest one match task runs before handing the worker to the next task, in milliseconds. */
export const SLICE_MS = 50;
/** How long past its scan's deadline a task may run before its worker is terminated, in milliseconds. */
export const TERMINATE_GRACE_MS = 1_000;

/** Settings of a {@link ScanPool}. */
export interface ScanPoolOptions {
  /** Worker threads. */
  threads: number;
  /** Scans one project may run at once. */
  projectConcurrency: number;
  /** Deadline of a request scan, in milliseconds. */
  requestTimeoutMs: number;
  /** Deadline of a background scan, in milliseconds. */
  backgroundTimeoutMs: number;
}

interface Waiter { key: string; start: () => void; done: Promise<void> }

/** A worker pool for scans; see the module doc. */
export class ScanPool {
  /** The workers, started with the first task ({@link workers}). */
  private pool: Piscina | null = null;
  private readonly running = new Map<number, Set<Scan>>();
  private readonly waiting = new Map<number, Waiter[]>();
  /** `<projectId>:<key>` of the background scans running now. */
  private readonly runningKeys = new Set<string>();
  private nextPlanId = 1;
  private closed = false;

  constructor(readonly options: ScanPoolOptions, private readonly filename: string = path.join(WORKERS_DIR, 'scan.js')) {}

  /**
   * The worker pool, created at the first task: a control plane that never scans (most test
   * suites, a replica that only serves reads) spends no worker start-up (about 150 ms of CPU
   * per thread, each loading the evaluation modules); the first scan waits for it once.
   */
  private workers(): Piscina {
    this.pool ??= new Piscina({ filename: this.filename, minThreads: this.options.threads, maxThreads: this.options.threads, idleTimeout: 60_000 });
    return this.pool;
  }

  /**
   * Starts a scan answering a request of `projectId`; call {@link Scan.end} when done (finally).
   * @throws ApiError 429 throttled when the project already runs `projectConcurrency` scans.
   */
  begin(projectId: number): Scan {
    const running = this.running.get(projectId);
    if (running && running.size >= this.options.projectConcurrency) {
      let first = Infinity;
      for (const s of running) first = Math.min(first, s.deadlineMs);
      throw errors.throttled((first - Date.now()) / 1000);
    }
    return this.open(projectId, this.options.requestTimeoutMs);
  }

  /**
   * Runs `work` with a background scan of `projectId` once the project has a free slot and no
   * background scan of the same `key` runs; the scan ends when `work` settles. When one with the
   * same `key` is already waiting, this one is folded into it (returns its promise): work reads
   * its input when it starts, so the waiting one sees the latest state. Resolves when the work
   * has run and its slot is free again; rejects as `work` rejects, or when the pool closes before it started.
   */
  background(projectId: number, key: string, work: (scan: Scan) => Promise<void>): Promise<void> {
    if (this.closed) return Promise.reject(new Error('scan pool closed'));
    const queue = this.waiting.get(projectId) ?? [];
    const same = queue.find((w) => w.key === key);
    if (same) return same.done;
    let start!: () => void;
    const done = new Promise<void>((resolve, reject) => {
      start = () => {
        const scan = this.open(projectId, this.options.backgroundTimeoutMs);
        const running = `${projectId}:${key}`;
        this.runningKeys.add(running);
        work(scan).finally(() => { this.runningKeys.delete(running); scan.end(); }).then(resolve, reject);
      };
    });
    const waiter: Waiter = { key, start, done };
    queue.push(waiter);
    this.waiting.set(projectId, queue);
    this.startWaiting(projectId);
    return done;
  }

  /** Scans running now for `projectId` (for tests and metrics). */
  runningFor(projectId: number): number {
    return this.running.get(projectId)?.size ?? 0;
  }

  /** Stops the workers; running tasks reject and waiting background scans never start. */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.clear();
    await this.pool?.destroy();
  }

  private open(projectId: number, timeoutMs: number): Scan {
    const scan = new Scan(this, projectId, Date.now() + timeoutMs);
    const set = this.running.get(projectId) ?? new Set<Scan>();
    set.add(scan);
    this.running.set(projectId, set);
    return scan;
  }

  private startWaiting(projectId: number): void {
    const queue = this.waiting.get(projectId);
    if (queue === undefined) return;
    for (let i = 0; i < queue.length && this.runningFor(projectId) < this.options.projectConcurrency;) {
      if (this.runningKeys.has(`${projectId}:${queue[i]!.key}`)) { i++; continue; }
      queue.splice(i, 1)[0]!.start();
    }
    if (queue.length === 0) this.waiting.delete(projectId);
  }

  /** @internal */
  ended(scan: Scan): void {
    const set = this.running.get(scan.projectId);
    if (!set?.delete(scan)) return;
    if (set.size === 0) this.running.delete(scan.projectId);
    if (!this.closed) this.startWaiting(scan.projectId);
  }

  /** @internal */
  planRef(plan: ScanPlan): PlanRef {
    const bytes = new TextEncoder().encode(JSON.stringify(plan));
    const json = new SharedArrayBuffer(bytes.length);
    new Uint8Array(json).set(bytes);
    return { id: this.nextPlanId++, json, length: bytes.length };
  }

  /** @internal Runs one task with the scan's deadline. @throws ApiError 504 past it. */
  async run<T>(task: ScanTask, deadlineMs: number): Promise<T> {
    if (this.closed) throw new Error('scan pool closed');
    const remaining = deadlineMs - Date.now();
    if (remaining <= 0) throw errors.queryTimeout();
    try {
      return await this.workers().run(task, { signal: AbortSignal.timeout(remaining + TERMINATE_GRACE_MS) }) as T;
    } catch (e) {
      if ((e as { name?: string } | null)?.name === 'AbortError') throw errors.queryTimeout();
      throw e;
    }
  }
}

/** One scan: a deadline and a slot of its project. Not reusable after {@link end}. */
export class Scan {
  /** Rows of the next match task (see {@link CHUNK_ROWS}). */
  private chunkRows = CHUNK_ROWS;

  constructor(private readonly owner: ScanPool, readonly projectId: number, readonly deadlineMs: number) {}

  /** Encodes a plan once for every task of this scan. */
  plan(plan: ScanPlan): PlanRef {
    return this.owner.planRef(plan);
  }

  /** Compiles the plan in a worker: its first problem, and the person keys rows must carry. @throws ApiError 504. */
  prepare(plan: PlanRef): Promise<PrepareAnswer> {
    return this.owner.run<PrepareAnswer>({ op: 'prepare', plan }, this.deadlineMs);
  }

  /**
   * Indexes of the `rows` the plan matches, ascending. Rows are plain objects of the plan's row
   * shape (protocol.ts), sent in chunks of about one slice's work.
   * @throws ApiError 504 when the deadline passes first (the workers stop at it).
   */
  async match(plan: PlanRef, rows: ArrayLike<unknown>): Promise<number[]> {
    const out: number[] = [];
    let start = 0;
    while (start < rows.length) {
      const end = Math.min(rows.length, start + this.chunkRows);
      const sent = end - start;
      // A plain array: a cursor page is a postgres.js RowList, whose extra fields need not clone.
      const chunk: unknown[] = new Array(end - start);
      for (let i = start; i < end; i++) chunk[i - start] = rows[i];
      const answer = await this.owner.run<MatchAnswer>({ op: 'match', plan, rows: chunk, sliceMs: SLICE_MS, deadlineMs: this.deadlineMs }, this.deadlineMs);
      for (const m of answer.matched) out.push(start + m);
      if (answer.expired) throw errors.queryTimeout();
      start += answer.done;
      this.chunkRows = answer.done === sent ? Math.min(MAX_CHUNK_ROWS, this.chunkRows * 2) : Math.max(1, answer.done);
    }
    return out;
  }

  /** Every flag of an `evaluate` plan for one request body and stored context. @throws ApiError 504. */
  evaluate(plan: PlanRef, body: Record<string, unknown>, stored: StoredContext): Promise<EvaluationResult> {
    return this.owner.run<EvaluationResult>({ op: 'evaluate', plan, body, stored, deadlineMs: this.deadlineMs }, this.deadlineMs);
  }

  /** Frees the project's slot (idempotent). */
  end(): void {
    this.owner.ended(this);
  }
}

const registry = new WeakMap<Sql, ScanPool>();

/** Makes `pool` the scan pool of the control plane whose database handle is `sql`. */
export function registerScanPool(sql: Sql, pool: ScanPool): void {
  registry.set(sql, pool);
}

/**
 * The scan pool of the control plane whose database handle is `sql` (services receive only the
 * handle). @throws Error when none was registered (a control plane always registers one).
 */
export function scanPoolFor(sql: Sql): ScanPool {
  const pool = registry.get(sql);
  if (pool === undefined) throw new Error('no scan pool is registered for this database handle');
  return pool;
}
