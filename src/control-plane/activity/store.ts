/**
 * The activity log: who changed what, when, with a field-level diff. Rows are written inside
 * the change's own transaction (STYLE.md rule 8) and read newest first, page by page
 * (research/posthog-management-api.md §2.1).
 */
import type { Sql, Tx } from '../db/connect.js';
import type { FieldChange } from './diff.js';

/** PostHog's activity verbs used here. */
export type ActivityVerb = 'created' | 'updated' | 'deleted' | 'restored' | 'changed';

/** Input of {@link writeActivity}. */
export interface ActivityInput {
  projectId: number;
  /** Acting user, or null for the system (then `is_system`). */
  userId: number | null;
  activity: ActivityVerb;
  /** `FeatureFlag`, `EventDefinition`, `Experiment`, … */
  scope: string;
  itemId: string;
  /** `detail.name` (the flag key for flags). */
  name: string | null;
  changes: FieldChange[] | null;
}

/** Writes one activity entry in `tx`. Callers skip `updated` entries with no changes (PostHog never writes them). */
export async function writeActivity(tx: Tx | Sql, e: ActivityInput): Promise<void> {
  const detail = { changes: e.changes, trigger: null, name: e.name, short_id: null, type: null };
  await tx`INSERT INTO activity_log (project_id, user_id, is_system, activity, scope, item_id, detail)
    VALUES (${e.projectId}, ${e.userId}, ${e.userId === null}, ${e.activity}, ${e.scope}, ${e.itemId}, ${tx.json(detail as never)})`;
}

/** One entry in PostHog's response shape. */
export interface ActivityEntry {
  id: string;
  user: { first_name: string; email: string | null; is_system?: true };
  activity: string;
  scope: string;
  item_id: string;
  detail: Record<string, unknown>;
  created_at: string;
}

/**
 * Reads a page (1-based `page`, `limit` rows) of the entries for `scope` in a project,
 * optionally for one `itemId`, newest first; also returns the total count.
 */
export async function readActivity(sql: Sql, q: { projectId: number; scope: string; itemId?: string; page: number; limit: number }):
  Promise<{ total: number; results: ActivityEntry[] }> {
  const item = q.itemId ?? null;
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM activity_log
    WHERE project_id = ${q.projectId} AND scope = ${q.scope} AND (${item}::text IS NULL OR item_id = ${item})`;
  const rows = await sql<{ id: string; is_system: boolean; first_name: string | null; email: string | null; activity: string;
    scope: string; item_id: string; detail: Record<string, unknown>; created_at: Date }[]>`
    SELECT a.id, a.is_system, u.first_name, u.email, a.activity, a.scope, a.item_id, a.detail, a.created_at
    FROM activity_log a LEFT JOIN users u ON u.id = a.user_id
    WHERE a.project_id = ${q.projectId} AND a.scope = ${q.scope} AND (${item}::text IS NULL OR a.item_id = ${item})
    ORDER BY a.created_at DESC, a.id DESC LIMIT ${q.limit} OFFSET ${(q.page - 1) * q.limit}`;
  return {
    total: n,
    results: rows.map((r) => ({
      id: r.id,
      user: r.is_system ? { first_name: 'System', email: null, is_system: true } : { first_name: r.first_name ?? '', email: r.email },
      activity: r.activity,
      scope: r.scope,
      item_id: r.item_id,
      detail: r.detail,
      created_at: r.created_at.toISOString(),
    })),
  };
}
