/**
 * Writes tenancy and definition rows straight into Postgres, each with its change-log entry in
 * the same transaction (as the real writers do), for sync tests that must not depend on the
 * management API being built in parallel.
 */
import crypto from 'node:crypto';
import type { Sql } from '../../src/control-plane/db/connect.js';
import { appendChanges } from '../../src/control-plane/change-log/store.js';
import { organizationEntity } from '../../src/control-plane/quota/service.js';
import {
  cohortEntity, featureFlagEntity, groupTypeMappingEntity, groupTypeMappingId, projectEntity,
  type FeatureFlagRow,
} from '../../src/contract/entities.js';

/** Inserts an organization; returns its id. */
export async function seedOrganization(sql: Sql, name = 'Org'): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }[]>`
      INSERT INTO organizations (name) VALUES (${name}) RETURNING id, name, monthly_flag_requests_limit, quota_limited`;
    await appendChanges(tx, [{ projectId: null, kind: 'organization', entityId: String(row!.id), op: 'upsert', payload: organizationEntity(row!) }]);
    return row!.id;
  }) as Promise<number>;
}

/** Renames an organization as the control plane does: the row and its change-log entry in one transaction. */
export async function renameOrganization(sql: Sql, id: number, name: string): Promise<void> {
  await sql.begin(async (tx) => {
    const [o] = await tx<{ id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }[]>`
      UPDATE organizations SET name = ${name} WHERE id = ${id} RETURNING id, name, monthly_flag_requests_limit, quota_limited`;
    await appendChanges(tx, [{ projectId: null, kind: 'organization', entityId: String(o!.id), op: 'upsert', payload: organizationEntity(o!) }]);
  });
}

/** Inserts a project with a fresh API token; returns id and token. */
export async function seedProject(sql: Sql, organizationId: number, name = 'Project'): Promise<{ id: number; token: string }> {
  return sql.begin(async (tx) => {
    const token = `phc_${crypto.randomBytes(16).toString('hex')}`;
    const [row] = await tx<{ id: number; organization_id: number; name: string; api_token: string; timezone: string }[]>`
      INSERT INTO projects (organization_id, name, api_token) VALUES (${organizationId}, ${name}, ${token})
      RETURNING id, organization_id, name, api_token, timezone`;
    await appendChanges(tx, [{ projectId: row!.id, kind: 'project', entityId: String(row!.id), op: 'upsert', payload: projectEntity(row!) }]);
    return { id: row!.id, token };
  }) as Promise<{ id: number; token: string }>;
}

/** Inserts a flag (100% rollout unless `filters` given); returns its id. */
export async function seedFlag(sql: Sql, projectId: number, key: string, filters: Record<string, unknown> = { groups: [{ properties: [], rollout_percentage: 100 }] }): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<FeatureFlagRow[]>`
      INSERT INTO feature_flags (project_id, key, name, filters) VALUES (${projectId}, ${key}, ${key}, ${tx.json(filters as never)}) RETURNING *`;
    await appendChanges(tx, [{ projectId, kind: 'feature_flag', entityId: String(row!.id), op: 'upsert', payload: featureFlagEntity(row!) }]);
    return row!.id;
  }) as Promise<number>;
}

/** Updates a flag (version + 1) with `patch`; soft-deletes with `{deleted: true}`. */
export async function updateFlag(sql: Sql, id: number, patch: { active?: boolean; deleted?: boolean; name?: string }): Promise<void> {
  await sql.begin(async (tx) => {
    const [row] = await tx<FeatureFlagRow[]>`
      UPDATE feature_flags SET version = version + 1,
        active = coalesce(${patch.active ?? null}::boolean, active),
        deleted = coalesce(${patch.deleted ?? null}::boolean, deleted),
        name = coalesce(${patch.name ?? null}::text, name)
      WHERE id = ${id} RETURNING *`;
    await appendChanges(tx, [{ projectId: row!.project_id, kind: 'feature_flag', entityId: String(id), op: 'upsert', payload: featureFlagEntity(row!) }]);
  });
}

/** Inserts a cohort; returns its id. */
export async function seedCohort(sql: Sql, projectId: number, name: string): Promise<number> {
  return sql.begin(async (tx) => {
    const filters = { properties: { type: 'AND', values: [{ key: 'email', type: 'person', value: '@x.com', operator: 'icontains' }] } };
    const [row] = await tx<{ id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }[]>`
      INSERT INTO cohorts (project_id, name, filters) VALUES (${projectId}, ${name}, ${tx.json(filters as never)})
      RETURNING id, project_id, name, filters, is_static, deleted`;
    await appendChanges(tx, [{ projectId, kind: 'cohort', entityId: String(row!.id), op: 'upsert', payload: cohortEntity(row!) }]);
    return row!.id;
  }) as Promise<number>;
}

/** Inserts a group type mapping. */
export async function seedGroupType(sql: Sql, projectId: number, groupType: string, index: number): Promise<void> {
  await sql.begin(async (tx) => {
    const [row] = await tx<{ project_id: number; group_type: string; group_type_index: number }[]>`
      INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES (${projectId}, ${groupType}, ${index})
      RETURNING project_id, group_type, group_type_index`;
    await appendChanges(tx, [{ projectId, kind: 'group_type_mapping', entityId: groupTypeMappingId(projectId, index), op: 'upsert', payload: groupTypeMappingEntity(row!) }]);
  });
}

/** Inserts a user of `organizationId`; returns its id (users are not replicated). */
export async function seedUser(sql: Sql, organizationId: number): Promise<number> {
  const tag = crypto.randomBytes(6).toString('hex');
  const [row] = await sql<{ id: number }[]>`
    INSERT INTO users (organization_id, distinct_id, email) VALUES (${organizationId}, ${tag}, ${`${tag}@example.com`}) RETURNING id`;
  return row!.id;
}
