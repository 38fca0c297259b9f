/**
 * Scheduled changes on the control plane's job queue (pg-boss, jobs/queue.ts):
 * creating a change enqueues, in the creating transaction, a job that starts at `scheduled_at`;
 * whichever control plane's worker takes it sweeps every due change (./apply.ts). The job lives in
 * Postgres, so a change survives restarts and a failover; a job that fails (a change worth
 * retrying) is retried by pg-boss.
 */
import type { Sql, Tx } from '../db/connect.js';
import type { JobQueue, JobWorker } from '../jobs/queue.js';
import { FeatureFlagService } from '../feature-flags/service.js';
import { applyDueChanges } from './apply.js';

/** Name of the pg-boss queue. */
export const SCHEDULED_CHANGES_QUEUE = 'scheduled-changes';

/** The worker every control plane runs: a job is a wake-up at a change's time, its data `{id}` only says which change asked. */
export function scheduledChangesWorker(sql: Sql): JobWorker {
  const flags = new FeatureFlagService(sql);
  return { queue: SCHEDULED_CHANGES_QUEUE, async handle() { await applyDueChanges(sql, flags); } };
}

/** Enqueues the wake-up of change `id` at `at` inside the creating transaction `tx` (retried up to 5 times, backing off from 5 s). */
export function enqueueScheduledChange(jobs: JobQueue, tx: Tx, id: number, at: Date): Promise<void> {
  return jobs.sendWithin(tx, SCHEDULED_CHANGES_QUEUE, { id }, { startAfter: at, retryLimit: 5, retryDelay: 5, retryBackoff: true });
}
