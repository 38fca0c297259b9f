/**
 * Feature-flag request quota (spec §7 "Feature flag quota exceeded", §8; PostHog's
 * `quotaLimited: ["feature_flags"]`): each organization may have a monthly limit on /flags
 * requests. Evaluation nodes count requests and report them (gRPC ReportUsage); the control
 * plane sums them per UTC month, and when usage reaches the limit marks the organization
 * `quota_limited`. The flag travels to every node through the change log, so nodes decide
 * locally with no call on the hot path. Raising the limit (or a new month) lifts it.
 */
import type { Sql, Tx } from '../db/connect.js';
import { appendChanges } from '../change-log/store.js';
import type { OrganizationEntity } from '../../contract/entities.js';

/** Calendar month of `at` in UTC, `YYYY-MM`. */
export function usagePeriod(at: Date): string {
  return at.toISOString().slice(0, 7);
}

interface OrgRow { id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }

/** organizations row → change-log entity. */
export function organizationEntity(row: OrgRow): OrganizationEntity {
  return { id: row.id, name: row.name, monthly_flag_requests_limit: row.monthly_flag_requests_limit, quota_limited: row.quota_limited };
}

/** Recomputes `quota_limited` for one organization and period inside `tx`; appends a change when it flips. */
async function refresh(tx: Tx, organizationId: number, period: string): Promise<OrgRow> {
  const [org] = await tx<OrgRow[]>`SELECT id, name, monthly_flag_requests_limit, quota_limited FROM organizations WHERE id = ${organizationId} FOR UPDATE`;
  if (!org) throw new Error(`no organization ${organizationId}`);
  const [usage] = await tx<{ n: number }[]>`SELECT flag_requests AS n FROM flag_request_usage WHERE organization_id = ${organizationId} AND period = ${period}`;
  const used = usage?.n ?? 0;
  const limited = org.monthly_flag_requests_limit !== null && used >= org.monthly_flag_requests_limit;
  if (limited !== org.quota_limited) {
    await tx`UPDATE organizations SET quota_limited = ${limited} WHERE id = ${organizationId}`;
    org.quota_limited = limited;
    await appendChanges(tx, [{ projectId: null, kind: 'organization', entityId: String(org.id), op: 'upsert', payload: organizationEntity(org) }]);
  }
  return org;
}

/**
 * Sets (or clears, with null) an organization's monthly limit and re-evaluates the current
 * month. @returns the organization's new state. @throws Error for an unknown organization.
 */
export async function setMonthlyFlagRequestLimit(sql: Sql, organizationId: number, limit: number | null, now = new Date()): Promise<OrganizationEntity> {
  return sql.begin(async (tx: Tx) => {
    const updated = await tx`UPDATE organizations SET monthly_flag_requests_limit = ${limit} WHERE id = ${organizationId} RETURNING id`;
    if (updated.length === 0) throw new Error(`no organization ${organizationId}`);
    const before = await tx<OrgRow[]>`SELECT id, name, monthly_flag_requests_limit, quota_limited FROM organizations WHERE id = ${organizationId}`;
    const org = await refresh(tx, organizationId, usagePeriod(now));
    // The limit itself changed: nodes show it in metrics, so publish even when the flag did not flip.
    if (org.quota_limited === before[0]!.quota_limited) {
      await appendChanges(tx, [{ projectId: null, kind: 'organization', entityId: String(org.id), op: 'upsert', payload: organizationEntity(org) }]);
    }
    return organizationEntity(org);
  }) as Promise<OrganizationEntity>;
}

/**
 * Adds reported flag-request counts (organization id → count) for `period` and re-evaluates
 * each organization. Unknown organizations are ignored (a node may report a deleted one).
 */
export async function recordFlagRequestUsage(sql: Sql, counts: ReadonlyMap<number, number>, period: string): Promise<void> {
  if (counts.size === 0) return;
  await sql.begin(async (tx: Tx) => {
    for (const [org, n] of [...counts].sort((a, b) => a[0] - b[0])) {
      if (!(n > 0)) continue;
      const [exists] = await tx`SELECT 1 FROM organizations WHERE id = ${org}`;
      if (!exists) continue;
      await tx`INSERT INTO flag_request_usage (organization_id, period, flag_requests) VALUES (${org}, ${period}, ${n})
        ON CONFLICT (organization_id, period) DO UPDATE SET flag_requests = flag_request_usage.flag_requests + ${n}`;
      await refresh(tx, org, period);
    }
  });
}

/** Usage of an organization in `period`. */
export async function flagRequestUsage(sql: Sql, organizationId: number, period: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT flag_requests AS n FROM flag_request_usage WHERE organization_id = ${organizationId} AND period = ${period}`;
  return row?.n ?? 0;
}

/**
 * Re-evaluates every organization with a limit for the month of `now` (lifts the flag when a
 * new month starts). Called periodically by the control plane.
 */
export async function refreshAllQuotas(sql: Sql, now = new Date()): Promise<void> {
  const orgs = await sql<{ id: number }[]>`SELECT id FROM organizations WHERE monthly_flag_requests_limit IS NOT NULL OR quota_limited`;
  for (const { id } of orgs) await sql.begin((tx: Tx) => refresh(tx, id, usagePeriod(now)));
}
