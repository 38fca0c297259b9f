/**
 * The control plane's job queue on pg-boss, a Postgres job queue: E8 enqueues a timeseries
 * job per recalculation request, a worker in the control plane runs it (backfill.ts); other
 * resources add {@link JobWorker}s of their own (scheduled changes) and enqueue inside their
 * own transactions ({@link TimeseriesQueue.sendWithin}). Jobs live in the same database, so they
 * survive restarts — a control plane that starts and finds pg-boss's schema resumes the work
 * left behind.
 *
 * pg-boss starts on first use (or at start when its schema exists), so control planes that never
 * compute a timeseries pay nothing. `work: false` enqueues timeseries jobs without working them (a
 * control plane that leaves them to others); extra workers always work.
 *
 * pg-boss talks to Postgres through a small postgres.js pool of the queue's own (db/pg-boss-db.ts),
 * so a multi-host `DATABASE_URL` fails over with the rest of the control plane. Jobs are claimed
 * in Postgres (SKIP LOCKED), so several control planes share the queue; a job whose control
 * plane died mid-run expires after {@link JOB_EXPIRY_SECONDS} and is retried by a survivor.
 */
import PgBoss from 'pg-boss';
import { connect, type Sql, type Tx } from '../../db/connect.js';
import { pgBossDb } from '../../db/pg-boss-db.js';
import type { Logger } from '../../../log.js';
import { runRecalculation } from './backfill.js';

/** Name of the pg-boss queue. */
export const TIMESERIES_QUEUE = 'experiment-timeseries';
/** How often an idle worker polls, in seconds (pg-boss's minimum). */
const POLL_SECONDS = 0.5;
/** A job running longer than this is retried by pg-boss (the backfill resumes where it stopped). */
const JOB_EXPIRY_SECONDS = 3600;

/** A queue worked by every control plane: `handle` runs each job's data (throwing fails the job; pg-boss retries it). */
export interface JobWorker {
  queue: string;
  handle(data: unknown): Promise<void>;
}

/** Enqueues and works timeseries recalculations and the jobs of the extra {@link JobWorker}s. */
export class TimeseriesQueue {
  private boss: Promise<PgBoss> | null = null;
  /** pg-boss's own pool (made with it). */
  private bossSql: Sql | null = null;
  private closed = false;
  /** Extra workers' handlers still running: close() lets them finish before the pools end. */
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly databaseUrl: string, private readonly sql: Sql, private readonly log: Logger, private readonly work = true,
    private readonly workers: readonly JobWorker[] = []) {}

  /** Starts the worker when jobs may be waiting (pg-boss's schema exists). */
  async resume(): Promise<void> {
    const [row] = await this.sql<{ present: boolean }[]>`SELECT to_regnamespace('pgboss') IS NOT NULL AS present`;
    if (row?.present) await this.ensure();
  }

  /** Enqueues recalculation `id`. */
  async enqueue(id: string): Promise<void> {
    const boss = await this.ensure();
    await boss.send(TIMESERIES_QUEUE, { id }, { retryLimit: 2, retryDelay: 5, expireInSeconds: JOB_EXPIRY_SECONDS });
  }

  /**
   * Enqueues `data` on `queue` (an extra worker's) inside the caller's transaction `tx`, to run
   * at `startAfter` or soon after (workers poll every {@link POLL_SECONDS} s): the job exists iff
   * `tx` commits. Starts pg-boss (creating its schema) on first use.
   */
  async sendWithin(tx: Tx, queue: string, data: object, startAfter: Date): Promise<void> {
    const boss = await this.ensure();
    const db = {
      async executeSql(text: string, values: unknown[] = []) {
        return { rows: [...await tx.unsafe(text, values.map((v) => (v === undefined ? null : v)) as never[])] };
      },
    };
    await boss.send(queue, data, { startAfter, db, retryLimit: 5, retryDelay: 5, retryBackoff: true });
  }

  /** Stops the workers (a running timeseries job finishes its current day, a running extra job finishes) and closes pg-boss's pool. */
  async close(): Promise<void> {
    this.closed = true;
    const boss = await this.boss?.catch(() => null);
    await boss?.stop({ graceful: true, timeout: 5000, wait: true, close: true }).catch((e: unknown) => this.log.warn({ err: e }, 'pg-boss stop failed'));
    // A job fetched as the stop began may start after pg-boss's wait: it still finishes on open pools.
    await Promise.allSettled([...this.running]);
    await this.bossSql?.end({ timeout: 5 }).catch(() => {});
  }

  private ensure(): Promise<PgBoss> {
    if (this.closed) return Promise.reject(new Error('the timeseries queue is closed'));
    this.boss ??= (async () => {
      this.bossSql = connect(this.databaseUrl, { max: 3, applicationName: 'switchyard-jobs' });
      const boss = new PgBoss({ db: pgBossDb(this.bossSql), schedule: false });
      boss.on('error', (e) => this.log.error({ err: e }, 'pg-boss error'));
      await boss.start();
      await boss.createQueue(TIMESERIES_QUEUE);
      for (const w of this.workers) {
        await boss.createQueue(w.queue);
        await boss.work(w.queue, { pollingIntervalSeconds: POLL_SECONDS, batchSize: 1 }, async (jobs) => {
          for (const job of jobs) {
            const run = w.handle(job.data);
            this.running.add(run);
            try { await run; } finally { this.running.delete(run); }
          }
        });
      }
      if (this.work) {
        await boss.work<{ id: string }>(TIMESERIES_QUEUE, { pollingIntervalSeconds: POLL_SECONDS, batchSize: 1 }, async (jobs) => {
          for (const job of jobs) await runRecalculation(this.sql, job.data.id);
        });
      }
      return boss;
    })();
    return this.boss;
  }
}
