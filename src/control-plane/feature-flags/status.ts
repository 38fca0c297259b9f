/**
 * A flag's computed `status` (research/posthog-management-api.md §2.6; PostHog
 * `posthog/models/feature_flag/flag_status.py`), as the UPPERCASE names the list and retrieve
 * responses carry. The list filter `active=STALE` has an SQL twin in store.ts
 * ({@link STALE_DAYS} and the same "fully rolled out" rule); tests pin both to the same cases.
 *
 * A group `rollout_percentage` of null means 100 % (that is how evaluation treats it), so a
 * flag created without filters — stored as one empty group with a null rollout — counts as fully
 * rolled out, as PostHog's `{}` filters do.
 */
import type { Filters } from './types.js';

/** Age, in days, after which an unused or fully rolled-out flag is reported. */
export const STALE_DAYS = 30;
const DAY_MS = 86_400_000;

/** The status names (UNKNOWN is only produced by the per-flag status endpoint). */
export type FlagStatus = 'ACTIVE' | 'INACTIVE' | 'STALE' | 'DELETED' | 'UNKNOWN';

type Obj = Record<string, unknown>;

function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

function isFullGroup(g: Obj): boolean {
  const rp = g.rollout_percentage;
  const props = g.properties;
  return (rp === undefined || rp === null || rp === 100) && (props === undefined || props === null || (Array.isArray(props) && props.length === 0));
}

/** True when every user gets the same value: the flag always returns true or one variant. */
export function isFullyRolledOut(filters: Filters | null | undefined): boolean {
  if (!filters || Object.keys(filters).length === 0) return true;
  const groups = (Array.isArray(filters.groups) ? filters.groups : []) as Obj[];
  const full = groups.filter((g) => g !== null && typeof g === 'object' && isFullGroup(g));
  if (!truthy(filters.multivariate)) return full.length > 0;
  const variants = ((filters.multivariate as Obj).variants ?? []) as Obj[];
  const variantAt100 = Array.isArray(variants) && variants.some((v) => v?.rollout_percentage === 100);
  return full.some((g) => truthy(g.variant) || variantAt100);
}

/** The fields status depends on. */
export interface StatusInput {
  deleted: boolean;
  active: boolean;
  filters: Filters | null;
  created_at: Date;
  last_called_at: Date | null;
}

/** Computes the UPPERCASE status of `flag` at `now`. */
export function flagStatus(flag: StatusInput, now: Date = new Date()): FlagStatus {
  if (flag.deleted) return 'DELETED';
  const cutoff = now.getTime() - STALE_DAYS * DAY_MS;
  const old = flag.created_at.getTime() < cutoff;
  const inactive = flag.last_called_at === null ? old : flag.last_called_at.getTime() < cutoff;
  if (inactive) return 'INACTIVE';
  if (flag.active && old && isFullyRolledOut(flag.filters)) return 'STALE';
  return 'ACTIVE';
}
