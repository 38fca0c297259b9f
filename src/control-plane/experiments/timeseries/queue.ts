/**
 * Timeseries recalculations on the control plane's job queue (jobs/queue.ts): E8 enqueues a job
 * per recalculation request, and a worker runs it (backfill.ts). A job running past
 * {@link JOB_EXPIRY_SECONDS} (its control plane died) is retried by another; the backfill resumes
 * where it stopped.
 */
import type { Sql } from '../../db/connect.js';
import type { JobQueue, JobWorker } from '../../jobs/queue.js';
import { runRecalculation } from './backfill.js';

/** Name of the pg-boss queue. */
export const TIMESERIES_QUEUE = 'experiment-timeseries';
/** A job running longer than this, in seconds, is retried by pg-boss. */
const JOB_EXPIRY_SECONDS = 3600;

/** The timeseries worker; `work: false` leaves the jobs to other control planes (SWITCHYARD_TIMESERIES_WORKER). */
export function timeseriesWorker(sql: Sql, work: boolean): JobWorker {
  return {
    queue: TIMESERIES_QUEUE, work,
    async handle(data) { await runRecalculation(sql, (data as { id: string }).id); },
  };
}

/** Enqueues recalculation `id` (retried twice, 5 s apart). */
export function enqueueRecalculation(jobs: JobQueue, id: string): Promise<void> {
  return jobs.send(TIMESERIES_QUEUE, { id }, { retryLimit: 2, retryDelay: 5, expireInSeconds: JOB_EXPIRY_SECONDS });
}
