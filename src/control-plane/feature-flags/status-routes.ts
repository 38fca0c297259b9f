/**
 * F11 `GET /api/projects/:project_id/feature_flags/:id/status` (scope `feature_flag:read`;
 * research/posthog-management-api.md §2.6, PostHog `flag_status.py`, baseline): answers
 * `{status, reason}` with the lowercase status of {@link flagStatus} and PostHog's reason text;
 * an unknown flag (or a non-integer id) is 404 `{status: "unknown", reason: "Flag could not be
 * found"}`. The lookup is scoped to the project (the baseline is not; research §6.5).
 *
 * `last_called_at` comes from ingestion of `$feature_flag_called` (ingestion/flag-usage.ts).
 */
import type { Deps, Route } from '../http/types.js';
import { FLAG_PARAMS } from './schemas.js';
import { getFlag } from './store.js';
import { flagStatus, isFullyRolledOut, STALE_DAYS, type StatusInput } from './status.js';
import type { Filters } from './types.js';

const DAY_MS = 86_400_000;

/** Reason texts (PostHog `FeatureFlagStatusReason` wording). */
export const STATUS_REASONS = Object.freeze({
  unknown: 'Flag could not be found',
  deleted: 'Flag has been deleted',
  active: 'Flag is active and being evaluated',
  neverCalled: `Flag has never been called and is over ${STALE_DAYS} days old`,
  notCalledIn: (days: number) => `Flag has not been called in ${days} days`,
  alwaysTrue: 'This boolean flag will always evaluate to "true"',
  alwaysVariant: (variant: string) => `This flag will always use the variant "${variant}"`,
});

type Obj = Record<string, unknown>;

/** Why a fully rolled-out flag always gives the same value (`isFullyRolledOut` must hold). */
export function fullyRolledOutReason(filters: Filters | null): string {
  if (!filters || typeof filters.multivariate !== 'object' || filters.multivariate === null) return STATUS_REASONS.alwaysTrue;
  const variants = ((filters.multivariate as Obj).variants ?? []) as Obj[];
  const at100 = Array.isArray(variants) ? variants.find((v) => v?.rollout_percentage === 100) : undefined;
  const groups = (Array.isArray(filters.groups) ? filters.groups : []) as Obj[];
  for (const g of groups) {
    if (g === null || typeof g !== 'object') continue;
    const rp = g.rollout_percentage;
    const props = g.properties;
    const full = (rp === undefined || rp === null || rp === 100) && (props === undefined || props === null || (Array.isArray(props) && props.length === 0));
    if (!full) continue;
    if (typeof g.variant === 'string' && g.variant.length > 0) return STATUS_REASONS.alwaysVariant(g.variant);
    if (at100 && typeof at100.key === 'string') return STATUS_REASONS.alwaysVariant(at100.key);
  }
  return STATUS_REASONS.alwaysTrue;
}

/** `{status, reason}` of a flag (null = not found) at `now`. */
export function flagStatusWithReason(flag: StatusInput | null, now: Date = new Date()): { status: string; reason: string } {
  if (!flag) return { status: 'unknown', reason: STATUS_REASONS.unknown };
  const status = flagStatus(flag, now);
  if (status === 'DELETED') return { status: 'deleted', reason: STATUS_REASONS.deleted };
  const old = flag.created_at.getTime() < now.getTime() - STALE_DAYS * DAY_MS;
  const stale = flag.active && old && isFullyRolledOut(flag.filters);
  if (status === 'INACTIVE') {
    let reason = flag.last_called_at === null ? STATUS_REASONS.neverCalled
      : STATUS_REASONS.notCalledIn(Math.floor((now.getTime() - flag.last_called_at.getTime()) / DAY_MS));
    if (stale) {
      const extra = fullyRolledOutReason(flag.filters);
      reason = `${reason}. Additionally, ${extra.charAt(0).toLowerCase()}${extra.slice(1)}`;
    }
    return { status: 'inactive', reason };
  }
  if (status === 'STALE') return { status: 'stale', reason: fullyRolledOutReason(flag.filters) };
  return { status: 'active', reason: STATUS_REASONS.active };
}

/** The F11 route. */
export function featureFlagStatusRoutes(deps: Deps): Route[] {
  return [{
    method: 'GET', path: '/api/projects/:project_id/feature_flags/:id/status', scope: 'feature_flag:read',
    schema: { summary: 'Status of a flag: active, stale, inactive, deleted (F11)', tags: ['feature_flags'], params: FLAG_PARAMS, validatedBy: 'service' },
    async handler(ctx) {
      const raw = ctx.params.id ?? '';
      const flag = /^\d{1,15}$/.test(raw) ? await getFlag(deps.sql, ctx.project.id, Number(raw)) : null;
      const body = flagStatusWithReason(flag);
      return { status: body.status === 'unknown' ? 404 : 200, body };
    },
  }];
}
