/**
 * Applying due scheduled changes (PostHog's posthog/tasks/process_scheduled_changes.py and
 * FeatureFlag.scheduled_changes_dispatcher). A sweep takes one due change at a time —
 * `executed_at IS NULL AND scheduled_at <= now`, of a live project, oldest first — with a row
 * lock (`FOR UPDATE SKIP LOCKED`), and in that same transaction applies its payload to the flag as
 * a PATCH by the user who scheduled it (so the flag's activity entry names that user and the
 * change log carries the flag to every node) and sets `executed_at`. Two control planes sweeping
 * at once never take the same row, and a row committed as executed is never taken again: each
 * change is applied exactly once.
 *
 * Payloads (PostHog's shapes): `{operation: "update_status", value: <bool>}` → `{active: value}`;
 * `{operation: "add_release_condition", value: {groups: [...]}}` → the flag's filters with those
 * condition groups appended; `{operation: "update_variants", value: {variants, payloads}}` → the
 * filters with `multivariate.variants` and `payloads` replaced (rollouts must sum to 100, payload
 * keys must name variants).
 *
 * A failure rolls the flag back (savepoint) and records PostHog's failure context on the change:
 * errors of the change itself (bad payload, missing flag, a PATCH the flag refuses) are permanent
 * and set `executed_at`; others (database trouble) count towards {@link MAX_RETRY_ATTEMPTS} and
 * leave the change pending; the sweep then throws so the job queue runs it again later.
 */
import type { Sql, Tx } from '../db/connect.js';
import { isApiError } from '../../errors.js';
import type { FeatureFlagService } from '../feature-flags/service.js';
import { getFlag, lockDependencies } from '../feature-flags/store.js';
import type { FailureContext } from './store.js';

/** Attempts before a recoverable failure becomes final (PostHog's MAX_RETRY_ATTEMPTS). */
export const MAX_RETRY_ATTEMPTS = 5;

/** A failure that is the change's own fault: never retried. */
class PermanentError extends Error {
  constructor(message: string, readonly errorType: string) { super(message); }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The flag PATCH body a payload means for a flag whose stored filters are `filters`. @throws PermanentError. */
export function flagPatchFor(payload: unknown, filters: Obj): Obj {
  if (!isObj(payload) || !('operation' in payload) || !('value' in payload)) throw new PermanentError('Invalid payload', 'Exception');
  const { operation, value } = payload;
  if (operation === 'update_status') return { active: value };
  if (operation === 'add_release_condition') {
    const added = isObj(value) && Array.isArray(value.groups) ? value.groups : [];
    const current = Array.isArray(filters.groups) ? filters.groups : [];
    return { filters: { ...filters, groups: [...current, ...added] } };
  }
  if (operation === 'update_variants' && isObj(value)) {
    const variants = Array.isArray(value.variants) ? value.variants as unknown[] : [];
    const payloads = isObj(value.payloads) ? value.payloads : {};
    if (variants.length > 0) {
      const total = variants.reduce<number>((s, v) => s + (isObj(v) && typeof v.rollout_percentage === 'number' ? v.rollout_percentage : 0), 0);
      if (total !== 100) throw new PermanentError(`Invalid variant rollout percentages: sum is ${total}, must be 100`, 'ValueError');
    }
    const keys = new Set(variants.map((v) => (isObj(v) ? v.key : undefined)));
    const stray = Object.keys(payloads).filter((k) => !keys.has(k));
    if (variants.length > 0 && stray.length > 0) throw new PermanentError(`Payload keys ${stray.join(', ')} don't match variant keys`, 'ValueError');
    const multivariate = isObj(filters.multivariate) ? filters.multivariate : {};
    return { filters: { ...filters, multivariate: { ...multivariate, variants }, payloads } };
  }
  throw new PermanentError(`Unrecognized operation: ${String(operation)}`, 'Exception');
}

/** A due change as the sweep reads it. */
interface DueRow { id: number; project_id: number; record_id: string; model_name: string; payload: unknown; failure_count: number; created_by_id: number | null }

/** Applies one change's payload in `tx` (flag row locked as the flag service locks it). @throws PermanentError, ApiError, driver errors. */
async function applyToFlag(tx: Tx, flags: FeatureFlagService, c: DueRow): Promise<void> {
  if (c.model_name !== 'FeatureFlag') throw new PermanentError(`Unsupported model: ${c.model_name}`, 'Exception');
  const id = /^\d{1,15}$/.test(c.record_id) ? Number(c.record_id) : null;
  // Same lock order as every flag write: the project's dependency lock, then the row.
  await lockDependencies(tx, c.project_id);
  const flag = id === null ? null : await getFlag(tx, c.project_id, id, { forUpdate: true });
  if (!flag || flag.deleted) throw new PermanentError('FeatureFlag matching query does not exist.', 'DoesNotExist');
  const body = flagPatchFor(c.payload, isObj(flag.filters) ? flag.filters as Obj : {});
  const userId = c.created_by_id ?? flag.created_by_id;
  if (userId === null) throw new PermanentError('The user who scheduled the change is unknown.', 'Exception');
  await flags.updateIn(tx, c.project_id, userId, flag.id, body);
}

/** PostHog's failure context of `e` on attempt `count`. */
function failureContext(e: unknown, count: number): FailureContext {
  const permanent = e instanceof PermanentError || isApiError(e);
  const exhausted = count >= MAX_RETRY_ATTEMPTS;
  const ctx: FailureContext = {
    error: e instanceof Error ? e.message : String(e),
    error_type: e instanceof PermanentError ? e.errorType : isApiError(e) ? 'ValidationError' : (e as Error)?.name ?? 'Error',
    will_retry: !permanent && !exhausted,
    retry_count: count,
    max_retries: MAX_RETRY_ATTEMPTS,
    error_classification: permanent ? 'unrecoverable' : 'recoverable',
  };
  if (exhausted) ctx.retry_exhausted = true;
  return ctx;
}

/**
 * Applies every due change, one transaction each. @returns how many were applied.
 * @throws Error after the sweep when some change failed in a way worth retrying (the job queue retries).
 */
export async function applyDueChanges(sql: Sql, flags: FeatureFlagService): Promise<number> {
  const tried: number[] = [];
  let applied = 0;
  let retry: unknown = null;
  for (;;) {
    const outcome = await sql.begin(async (tx) => {
      const [c] = await tx<DueRow[]>`
        SELECT sc.id, sc.project_id, sc.record_id, sc.model_name, sc.payload, sc.failure_count, sc.created_by_id
        FROM scheduled_changes sc JOIN projects p ON p.id = sc.project_id AND p.deleted_at IS NULL
        WHERE sc.executed_at IS NULL AND sc.scheduled_at <= clock_timestamp() AND NOT (sc.id = ANY(${tried}::bigint[]))
        ORDER BY sc.scheduled_at, sc.id LIMIT 1
        FOR UPDATE OF sc SKIP LOCKED`;
      if (!c) return null;
      tried.push(c.id);
      try {
        await tx.savepoint((sp) => applyToFlag(sp as unknown as Tx, flags, c));
        await tx`UPDATE scheduled_changes SET executed_at = clock_timestamp(), updated_at = clock_timestamp() WHERE id = ${c.id}`;
        return { ok: true as const };
      } catch (e) {
        const ctx = failureContext(e, c.failure_count + 1);
        await tx`UPDATE scheduled_changes SET failure_count = ${ctx.retry_count}, failure_reason = ${JSON.stringify(ctx)},
          executed_at = CASE WHEN ${ctx.will_retry} THEN NULL ELSE clock_timestamp() END, updated_at = clock_timestamp()
          WHERE id = ${c.id}`;
        return { ok: false as const, retry: ctx.will_retry ? e : null };
      }
    });
    if (outcome === null) break;
    if (outcome.ok) applied++;
    else if (outcome.retry !== null) retry = outcome.retry;
  }
  if (retry !== null) throw retry instanceof Error ? retry : new Error(String(retry));
  return applied;
}
