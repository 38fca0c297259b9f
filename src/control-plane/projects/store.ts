/**
 * Organizations, projects and users in Postgres (tenancy, DESIGN.md "Control plane"), and the
 * project settings behind the browser SDK's remote config.
 */
import type { Sql, Tx } from '../db/connect.js';
import type { ProjectRow } from '../http/types.js';
import { PROJECT_SETTING_KEYS, projectEntity, projectSettings, type ProjectSettings } from '../../contract/entities.js';
import { appendChanges } from '../change-log/store.js';

/** Projects of an organization visible to a key (all, or only `scopedTeams` when non-empty), by id. */
export async function listProjects(sql: Sql, organizationId: number, scopedTeams: readonly number[], limit: number, offset: number):
  Promise<{ count: number; rows: (ProjectRow & { organization_uuid: string })[] }> {
  const scoped = scopedTeams.length > 0;
  const teams = [...scopedTeams];
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM projects
    WHERE organization_id = ${organizationId} AND (${!scoped} OR id = ANY(${teams}::bigint[]))`;
  const rows = await sql<(ProjectRow & { organization_uuid: string })[]>`
    SELECT p.id, p.organization_id, p.uuid, p.name, p.api_token, p.timezone, p.created_at, ${sql(PROJECT_SETTING_KEYS as string[])},
      o.uuid AS organization_uuid
    FROM projects p JOIN organizations o ON o.id = p.organization_id
    WHERE p.organization_id = ${organizationId} AND (${!scoped} OR p.id = ANY(${teams}::bigint[]))
    ORDER BY p.id LIMIT ${limit} OFFSET ${offset}`;
  return { count: n, rows };
}

/** Organization uuid of a project row's organization. */
export async function organizationUuid(sql: Sql | Tx, organizationId: number): Promise<string> {
  const [row] = await sql<{ uuid: string }[]>`SELECT uuid FROM organizations WHERE id = ${organizationId}`;
  return row!.uuid;
}

/** Project read shape of `/api/projects/` (a subset of PostHog's team serializer). */
export function serializeProject(p: ProjectRow, organizationUuid: string): Record<string, unknown> {
  return {
    id: p.id,
    uuid: p.uuid,
    organization: organizationUuid,
    api_token: p.api_token,
    name: p.name,
    timezone: p.timezone,
    created_at: p.created_at.toISOString(),
    ...projectSettings(p),
  };
}

/**
 * Sets settings of a project and writes the project to the change log in the same transaction,
 * so nodes serve the new remote config. `changes` holds only keys of PROJECT_SETTING_KEYS.
 * @returns the updated row.
 */
export async function updateProjectSettings(sql: Sql, projectId: number, changes: Partial<ProjectSettings>): Promise<ProjectRow> {
  return sql.begin(async (tx) => {
    const keys = PROJECT_SETTING_KEYS.filter((k) => changes[k] !== undefined);
    const [row] = keys.length === 0
      ? await tx<ProjectRow[]>`SELECT id, organization_id, uuid, name, api_token, timezone, created_at, ${tx(PROJECT_SETTING_KEYS as string[])}
          FROM projects WHERE id = ${projectId}`
      : await tx<ProjectRow[]>`UPDATE projects SET ${tx(changes as Record<string, boolean | number>, keys as string[])} WHERE id = ${projectId}
          RETURNING id, organization_id, uuid, name, api_token, timezone, created_at, ${tx(PROJECT_SETTING_KEYS as string[])}`;
    if (keys.length > 0) {
      await appendChanges(tx, [{ projectId, kind: 'project', entityId: String(projectId), op: 'upsert', payload: projectEntity(row!) }]);
    }
    return row!;
  }) as Promise<ProjectRow>;
}
