/**
 * The timeseries job queue on pg-boss, a Postgres job queue: E8 enqueues a
 * job per recalculation request, a worker in the control plane runs it (backfill.ts), and jobs
 * live in the same database, so they survive restarts — a control plane that starts and finds
 * pg-boss's schema resumes the work left behind.
 *
 * pg-boss starts on first use (or at start when its schema exists), so control planes that never
 * compute a timeseries pay nothing. `work: false` enqueues without working (a control plane that
 * leaves the jobs to others).
 *
 * pg-boss talks to Postgres through a small postgres.js pool of the queue's own (db/pg-boss-db.ts),
 * so a multi-host `DATABASE_URL` fails over with the rest of the control plane. Jobs are claimed
 * in Postgres (SKIP LOCKED), so several control planes share the queue; a job whose control
 * plane died mid-run expires after {@link JOB_EXPIRY_SECONDS} and is retried by a survivor.
 */
import PgBoss from 'pg-boss';
import { connect, type Sql } from '../../db/connect.js';
import { pgBossDb } from '../../db/pg-boss-db.js';
import type { Logger } from '../../../log.js';
import { runRecalculation } from './backfill.js';

/** Name of the pg-boss queue. */
export const TIMESERIES_QUEUE = 'experiment-timeseries';
/** How often an idle worker polls, in seconds (pg-boss's minimum). */
const POLL_SECONDS = 0.5;
/** A job running longer than this is retried by pg-boss (the backfill resumes where it stopped). */
const JOB_EXPIRY_SECONDS = 3600;

/** Enqueues and works timeseries recalculations. */
export class TimeseriesQueue {
  private boss: Promise<PgBoss> | null = null;
  /** pg-boss's own pool (made with it). */
  private bossSql: Sql | null = null;
  private closed = false;

  constructor(private readonly databaseUrl: string, private readonly sql: Sql, private readonly log: Logger, private readonly work = true) {}

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

  /** Stops the worker (a running job finishes its current day) and closes pg-boss's pool. */
  async close(): Promise<void> {
    this.closed = true;
    const boss = await this.boss?.catch(() => null);
    await boss?.stop({ graceful: true, timeout: 5000, wait: true, close: true }).catch((e: unknown) => this.log.warn({ err: e }, 'pg-boss stop failed'));
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
