/**
 * Scheduled changes in Postgres (migration 0020) and their API shape, PostHog's
 * ScheduledChangeSerializer: `team_id` is the project id, `failure_reason` the readable form of
 * the stored failure context (PostHog's `formatted_failure_reason`), `created_by` the embedded
 * user. One-time schedules only: the recurrence fields read as a one-time schedule's.
 */
import type { Sql, Tx } from '../db/connect.js';
import { userBasic, type UserRow } from '../users/serialize.js';
import type { ScheduledChangeInput } from './validate.js';

/** A scheduled_changes row with its creator's columns (null when the creator is unknown). */
export interface ScheduledChangeRow {
  id: number; project_id: number; record_id: string; model_name: string; payload: unknown;
  scheduled_at: Date; executed_at: Date | null; failure_reason: string | null; failure_count: number;
  created_by_id: number | null; timezone: string; created_at: Date; updated_at: Date;
  created_by: UserRow | null;
}

/** The failure context stored in `failure_reason` (PostHog's keys; hostname left out). */
export interface FailureContext {
  error: string; error_type: string; will_retry: boolean; retry_count: number; max_retries: number;
  error_classification: 'unrecoverable' | 'recoverable'; retry_exhausted?: true;
}

const SELECT_COLUMNS = `sc.id, sc.project_id, sc.record_id, sc.model_name, sc.payload, sc.scheduled_at, sc.executed_at,
  sc.failure_reason, sc.failure_count, sc.created_by_id, sc.timezone, sc.created_at, sc.updated_at,
  CASE WHEN u.id IS NULL THEN NULL ELSE json_build_object('id', u.id, 'uuid', u.uuid, 'distinct_id', u.distinct_id,
    'first_name', u.first_name, 'last_name', u.last_name, 'email', u.email, 'is_email_verified', u.is_email_verified,
    'hedgehog_config', u.hedgehog_config, 'role_at_organization', u.role_at_organization) END AS created_by`;

/** Inserts a change of `projectId` by `userId` (with the project's zone) and returns it. */
export async function insertScheduledChange(tx: Tx, projectId: number, userId: number, timezone: string, c: ScheduledChangeInput): Promise<ScheduledChangeRow> {
  const [{ id }] = await tx<{ id: number }[]>`INSERT INTO scheduled_changes (project_id, record_id, model_name, payload, scheduled_at, created_by_id, timezone)
    VALUES (${projectId}, ${c.record_id}, ${c.model_name}, ${tx.json(c.payload as never)}, ${c.scheduled_at}, ${userId}, ${timezone}) RETURNING id`;
  return (await getScheduledChange(tx, projectId, id))!;
}

/** One change of a project, or null. */
export async function getScheduledChange(h: Sql | Tx, projectId: number, id: number): Promise<ScheduledChangeRow | null> {
  const [row] = await h.unsafe<ScheduledChangeRow[]>(`SELECT ${SELECT_COLUMNS} FROM scheduled_changes sc LEFT JOIN users u ON u.id = sc.created_by_id
    WHERE sc.project_id = $1 AND sc.id = $2`, [projectId, id]);
  return row ?? null;
}

/** A page of a project's changes by id, optionally only those of `model_name` / `record_id` (PostHog's list filters). */
export async function listScheduledChanges(sql: Sql, projectId: number, f: { modelName: string | null; recordId: string | null }, limit: number, offset: number):
  Promise<{ count: number; rows: ScheduledChangeRow[] }> {
  const where = `sc.project_id = $1 AND ($2::text IS NULL OR sc.model_name = $2) AND ($3::text IS NULL OR sc.record_id = $3)`;
  const params = [projectId, f.modelName, f.recordId];
  const [{ n }] = await sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM scheduled_changes sc WHERE ${where}`, params);
  const rows = await sql.unsafe<ScheduledChangeRow[]>(`SELECT ${SELECT_COLUMNS} FROM scheduled_changes sc LEFT JOIN users u ON u.id = sc.created_by_id
    WHERE ${where} ORDER BY sc.id LIMIT $4 OFFSET $5`, [...params, limit, offset]);
  return { count: n, rows };
}

/** Deletes a change (PostHog's destroy: the row goes, executed or not). @returns false when there was none. */
export async function deleteScheduledChange(sql: Sql, projectId: number, id: number): Promise<boolean> {
  const rows = await sql`DELETE FROM scheduled_changes WHERE project_id = ${projectId} AND id = ${id} RETURNING id`;
  return rows.length > 0;
}

/** PostHog's `formatted_failure_reason`: the error and whether it will be retried. */
export function formatFailure(stored: string | null): string | null {
  if (!stored) return null;
  let c: Partial<FailureContext>;
  try {
    c = JSON.parse(stored) as Partial<FailureContext>;
  } catch {
    return stored;
  }
  if (typeof c !== 'object' || c === null || typeof c.error !== 'string') return stored;
  if (c.will_retry === false && c.retry_exhausted) return `${c.error} (failed after ${c.retry_count} out of ${c.max_retries} attempts)`;
  if (c.will_retry === false && c.error_classification === 'unrecoverable') return `${c.error} (permanent error)`;
  if (c.will_retry) {
    const left = (c.max_retries ?? 0) - (c.retry_count ?? 0);
    return `${c.error} (will retry automatically, ${left} ${left === 1 ? 'attempt' : 'attempts'} remaining)`;
  }
  return c.error;
}

/** A row in PostHog's ScheduledChangeSerializer shape. */
export function serializeScheduledChange(r: ScheduledChangeRow): Record<string, unknown> {
  return {
    id: r.id,
    team_id: r.project_id,
    record_id: r.record_id,
    model_name: r.model_name,
    payload: r.payload,
    scheduled_at: new Date(r.scheduled_at).toISOString(),
    executed_at: r.executed_at === null ? null : new Date(r.executed_at).toISOString(),
    failure_reason: formatFailure(r.failure_reason),
    created_at: new Date(r.created_at).toISOString(),
    created_by: userBasic(r.created_by),
    updated_at: new Date(r.updated_at).toISOString(),
    is_recurring: false,
    recurrence_interval: null,
    cron_expression: null,
    last_executed_at: null,
    end_date: null,
    timezone: r.timezone,
  };
}
