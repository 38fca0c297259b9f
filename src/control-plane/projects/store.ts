/**
 * Organizations, projects and users in Postgres (tenancy, DESIGN.md "Control plane"), the
 * project settings behind the browser SDK's remote config, and project API key rotation.
 */
import type { Sql, Tx } from '../db/connect.js';
import type { ProjectRow } from '../http/types.js';
import { PROJECT_SETTING_KEYS, projectEntity, projectSettings, type ProjectSettings } from '../../contract/entities.js';
import { appendChanges } from '../change-log/store.js';
import { writeActivity } from '../activity/store.js';
import { newProjectApiKey } from '../keys/tokens.js';
import { errors } from '../../errors.js';

/** A projects row with the previous key of a rotation (migration 0019; both null outside an overlap). */
export type ProjectRowWithPreviousKey = ProjectRow & { previous_api_token: string | null; previous_api_token_expires_at: Date | null };

/** Columns of {@link ProjectRowWithPreviousKey}: what the API serialises and what the change log's entity needs. */
const ROW_COLUMNS: readonly string[] = Object.freeze([
  'id', 'organization_id', 'uuid', 'name', 'api_token', 'timezone', 'created_at', 'previous_api_token', 'previous_api_token_expires_at',
  ...PROJECT_SETTING_KEYS,
]);

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
 * The entity keeps a previous key still in its overlap.
 * @returns the updated row.
 */
export async function updateProjectSettings(sql: Sql, projectId: number, changes: Partial<ProjectSettings>): Promise<ProjectRow> {
  return sql.begin(async (tx) => {
    const keys = PROJECT_SETTING_KEYS.filter((k) => changes[k] !== undefined);
    const [row] = keys.length === 0
      ? await tx<ProjectRowWithPreviousKey[]>`SELECT ${tx(ROW_COLUMNS as string[])} FROM projects WHERE id = ${projectId}`
      : await tx<ProjectRowWithPreviousKey[]>`UPDATE projects SET ${tx(changes as Record<string, boolean | number>, keys as string[])} WHERE id = ${projectId}
          RETURNING ${tx(ROW_COLUMNS as string[])}`;
    if (keys.length > 0) {
      await appendChanges(tx, [{ projectId, kind: 'project', entityId: String(projectId), op: 'upsert', payload: projectEntity(row!) }]);
    }
    return row!;
  }) as Promise<ProjectRow>;
}

/**
 * Replaces a project's API key with a new `phc_…` key (PostHog's `reset_token`: Team
 * `reset_token_and_save`), in one transaction with its change-log entry and an activity entry
 * (scope `Team`, field `api_token`, as PostHog logs it). With `overlapSeconds` > 0 the replaced
 * key stays accepted, by the control plane and by every node, until `overlapSeconds` after the
 * reset (Postgres clock); with 0 it stops at once, as in PostHog. A key that was itself still in
 * its overlap is dropped: only the key just replaced is kept. Concurrent resets of one project
 * run one after the other (row lock).
 * @returns the updated row. @throws ApiError 404 when the project is gone.
 */
export async function resetProjectToken(sql: Sql, projectId: number, overlapSeconds: number, userId: number | null): Promise<ProjectRowWithPreviousKey> {
  return sql.begin(async (tx) => {
    const [before] = await tx<{ api_token: string; name: string }[]>`SELECT api_token, name FROM projects WHERE id = ${projectId} FOR UPDATE`;
    if (!before) throw errors.notFound('Project not found.');
    const keep = overlapSeconds > 0;
    const [row] = await tx<ProjectRowWithPreviousKey[]>`UPDATE projects SET
        api_token = ${newProjectApiKey()},
        previous_api_token = ${keep ? before!.api_token : null},
        previous_api_token_expires_at = CASE WHEN ${keep} THEN clock_timestamp() + make_interval(secs => ${overlapSeconds}) END
      WHERE id = ${projectId}
      RETURNING ${tx(ROW_COLUMNS as string[])}`;
    await appendChanges(tx, [{ projectId, kind: 'project', entityId: String(projectId), op: 'upsert', payload: projectEntity(row!) }]);
    await writeActivity(tx, {
      projectId, userId, activity: 'updated', scope: 'Team', itemId: String(projectId), name: before!.name,
      changes: [{ type: 'Team', action: 'changed', field: 'api_token', before: before!.api_token, after: row!.api_token }],
    });
    return row!;
  }) as Promise<ProjectRowWithPreviousKey>;
}
