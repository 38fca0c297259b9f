/**
 * The control plane's job queue on pg-boss, a Postgres job queue. Each resource that defers work
 * names a {@link JobWorker}: experiment timeseries recalculations (experiments/timeseries/
 * queue.ts), scheduled flag changes (scheduled-changes/queue.ts). Jobs live in the same database,
 * so they survive restarts: a control plane that starts and finds pg-boss's schema resumes the
 * work left behind.
 *
 * pg-boss starts on first use (or at start when its schema exists), so control planes that never
 * defer work pay nothing. A worker with `work: false` has its queue created (jobs can be sent)
 * but not worked here (a control plane that leaves those jobs to others).
 *
 * pg-boss talks to Postgres through a small postgres.js pool of the queue's own (db/pg-boss-db.ts),
 * so a multi-host `DATABASE_URL` fails over with the rest of the control plane. Jobs are claimed
 * in Postgres (SKIP LOCKED), so several control planes share the queue; a job whose control
 * plane died mid-run expires and is retried by a survivor.
 */
import PgBoss from 'pg-boss';
import { connect, type Sql, type Tx } from '../db/connect.js';
import { pgBossDb } from '../db/pg-boss-db.js';
import type { Logger } from '../../log.js';

/** How often an idle worker polls, in seconds (pg-boss's minimum). */
export const POLL_SECONDS = 0.5;

/** One queue: `handle` runs each job's data (throwing fails the job; pg-boss retries it per the send options). */
export interface JobWorker {
  queue: string;
  handle(data: unknown): Promise<void>;
  /** Whether this control plane works the queue (default true); false only sends to it. */
  work?: boolean;
}

/** pg-boss's retry and start options of one job (retry delays and expiry in seconds). */
export type SendOptions = Pick<PgBoss.SendOptions, 'retryLimit' | 'retryDelay' | 'retryBackoff' | 'expireInSeconds' | 'startAfter'>;

/** Sends and works the jobs of its {@link JobWorker}s. */
export class JobQueue {
  private boss: Promise<PgBoss> | null = null;
  /** pg-boss's own pool (made with it). */
  private bossSql: Sql | null = null;
  private closed = false;
  /** Handlers still running: close() lets them finish before the pools end. */
  private readonly running = new Set<Promise<void>>();

  /** `sql` only answers whether pg-boss's schema exists ({@link resume}); pg-boss has a pool of its own. */
  constructor(private readonly databaseUrl: string, private readonly sql: Sql, private readonly log: Logger, private readonly workers: readonly JobWorker[]) {}

  /** Starts the workers when jobs may be waiting (pg-boss's schema exists). */
  async resume(): Promise<void> {
    const [row] = await this.sql<{ present: boolean }[]>`SELECT to_regnamespace('pgboss') IS NOT NULL AS present`;
    if (row?.present) await this.ensure();
  }

  /** Enqueues `data` on `queue`. Starts pg-boss (creating its schema) on first use. */
  async send(queue: string, data: object, options: SendOptions): Promise<void> {
    const boss = await this.ensure();
    await boss.send(queue, data, options);
  }

  /**
   * Enqueues `data` on `queue` inside the caller's transaction `tx`: the job exists iff `tx`
   * commits (workers poll every {@link POLL_SECONDS} s). Starts pg-boss on first use.
   */
  async sendWithin(tx: Tx, queue: string, data: object, options: SendOptions): Promise<void> {
    const boss = await this.ensure();
    const db = {
      async executeSql(text: string, values: unknown[] = []) {
        return { rows: [...await tx.unsafe(text, values.map((v) => (v === undefined ? null : v)) as never[])] };
      },
    };
    await boss.send(queue, data, { ...options, db });
  }

  /** Stops the workers (running jobs finish) and closes pg-boss's pool. */
  async close(): Promise<void> {
    this.closed = true;
    const boss = await this.boss?.catch(() => null);
    await boss?.stop({ graceful: true, timeout: 5000, wait: true, close: true }).catch((e: unknown) => this.log.warn({ err: e }, 'pg-boss stop failed'));
    // A job fetched as the stop began may start after pg-boss's wait: it still finishes on open pools.
    await Promise.allSettled([...this.running]);
    await this.bossSql?.end({ timeout: 5 }).catch(() => {});
  }

  private ensure(): Promise<PgBoss> {
    if (this.closed) return Promise.reject(new Error('the job queue is closed'));
    this.boss ??= (async () => {
      this.bossSql = connect(this.databaseUrl, { max: 3, applicationName: 'switchyard-jobs' });
      const boss = new PgBoss({ db: pgBossDb(this.bossSql), schedule: false });
      boss.on('error', (e) => this.log.error({ err: e }, 'pg-boss error'));
      await boss.start();
      for (const w of this.workers) {
        await boss.createQueue(w.queue);
        if (w.work === false) continue;
        await boss.work(w.queue, { pollingIntervalSeconds: POLL_SECONDS, batchSize: 1 }, async (jobs) => {
          for (const job of jobs) {
            const run = w.handle(job.data);
            this.running.add(run);
            try { await run; } finally { this.running.delete(run); }
          }
        });
      }
      return boss;
    })();
    return this.boss;
  }
}
