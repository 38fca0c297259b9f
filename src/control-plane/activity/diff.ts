/**
 * Field-by-field diff of two versions of a record, in PostHog's activity-log change shape
 * `{type, action: created|changed|deleted, field, before, after}`
 * (research/posthog-management-api.md §2.1; PostHog `activity_logging/activity_log.py` changes_between).
 */

/** One changed field. */
export interface FieldChange {
  type: string;
  action: 'created' | 'changed' | 'deleted';
  field: string;
  before: unknown;
  after: unknown;
}

/** Structural equality of JSON-like values (key order ignored; Dates by instant). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * Changes from `before` to `after` over the union of their fields, skipping `exclude`.
 * `before` null means the record was created: every field is reported as `created`.
 * A field absent (undefined) on one side is `created` / `deleted`; otherwise `changed`.
 */
export function diffRecords(scope: string, before: Record<string, unknown> | null, after: Record<string, unknown>,
  exclude: ReadonlySet<string> = new Set()): FieldChange[] {
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after)]);
  const out: FieldChange[] = [];
  for (const field of fields) {
    if (exclude.has(field)) continue;
    const b = before === null ? undefined : before[field];
    const a = after[field];
    if (before !== null && jsonEqual(a, b)) continue;
    const action = b === undefined ? 'created' : a === undefined ? 'deleted' : 'changed';
    out.push({ type: scope, action, field, before: b ?? null, after: a ?? null });
  }
  return out;
}

/**
 * The activity verb of an update with `changes`: `deleted` / `restored` when the soft-delete flag
 * changed that way, else `updated` (PostHog's activity log for flags, cohorts and experiments).
 */
export function updateVerb(changes: readonly FieldChange[]): 'updated' | 'deleted' | 'restored' {
  const d = changes.find((c) => c.field === 'deleted');
  return d ? (d.after ? 'deleted' : 'restored') : 'updated';
}
