/**
 * Organizations, projects and users in Postgres (tenancy, DESIGN.md "Control plane"): projects
 * created, changed and deleted through the API, the project settings behind the browser SDK's
 * remote config, and project API key rotation. Every write of a project appends its entity to
 * the change log in the write's transaction: that is how nodes learn projects and their keys.
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

/** Live projects of an organization visible to a key (all, or only `scopedTeams` when non-empty), by id. */
export async function listProjects(sql: Sql, organizationId: number, scopedTeams: readonly number[], limit: number, offset: number):
  Promise<{ count: number; rows: (ProjectRow & { organization_uuid: string })[] }> {
  const scoped = scopedTeams.length > 0;
  const teams = [...scopedTeams];
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM projects
    WHERE organization_id = ${organizationId} AND deleted_at IS NULL AND (${!scoped} OR id = ANY(${teams}::bigint[]))`;
  const rows = await sql<(ProjectRow & { organization_uuid: string })[]>`
    SELECT p.id, p.organization_id, p.uuid, p.name, p.api_token, p.timezone, p.created_at, ${sql(PROJECT_SETTING_KEYS as string[])},
      o.uuid AS organization_uuid
    FROM projects p JOIN organizations o ON o.id = p.organization_id
    WHERE p.organization_id = ${organizationId} AND p.deleted_at IS NULL AND (${!scoped} OR p.id = ANY(${teams}::bigint[]))
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

/** Writable fields of a project: PostHog's `name` and `timezone`, and the settings. */
export type ProjectChanges = Partial<ProjectSettings> & { name?: string; timezone?: string };

/** Keys of {@link ProjectChanges}, the columns they set. */
const CHANGE_KEYS: readonly (keyof ProjectChanges)[] = Object.freeze(['name', 'timezone', ...PROJECT_SETTING_KEYS]);

/**
 * Creates a project in `organizationId` with a new `phc_…` API key, in one transaction with its
 * change-log entry (so every node serves `/flags` for the key as soon as it reads the entry) and
 * an activity entry (scope `Project`, as PostHog logs it). PostHog's ProjectViewSet create.
 * @returns the new row.
 */
export async function createProject(sql: Sql, organizationId: number, userId: number, fields: ProjectChanges & { name: string }): Promise<ProjectRowWithPreviousKey> {
  return sql.begin(async (tx) => {
    const values: Record<string, unknown> = { organization_id: organizationId, api_token: newProjectApiKey() };
    for (const k of CHANGE_KEYS) if (fields[k] !== undefined) values[k] = fields[k];
    const [row] = await tx<ProjectRowWithPreviousKey[]>`INSERT INTO projects ${tx(values as Record<string, string | number | boolean>)}
      RETURNING ${tx(ROW_COLUMNS as string[])}`;
    await appendChanges(tx, [{ projectId: row!.id, kind: 'project', entityId: String(row!.id), op: 'upsert', payload: projectEntity(row!) }]);
    await writeActivity(tx, {
      projectId: row!.id, userId, activity: 'created', scope: 'Project', itemId: String(row!.id), name: row!.name, changes: null,
    });
    return row!;
  }) as Promise<ProjectRowWithPreviousKey>;
}

/**
 * Sets fields of a project and writes the project to the change log in the same transaction,
 * so nodes serve the new remote config and zone. `changes` holds only keys of {@link ProjectChanges}.
 * The entity keeps a previous key still in its overlap.
 * @returns the updated row. @throws ApiError 404 when the project was deleted meanwhile.
 */
export async function updateProject(sql: Sql, projectId: number, changes: ProjectChanges): Promise<ProjectRowWithPreviousKey> {
  return sql.begin(async (tx) => {
    const keys = CHANGE_KEYS.filter((k) => changes[k] !== undefined);
    const [row] = keys.length === 0
      ? await tx<ProjectRowWithPreviousKey[]>`SELECT ${tx(ROW_COLUMNS as string[])} FROM projects WHERE id = ${projectId} AND deleted_at IS NULL`
      : await tx<ProjectRowWithPreviousKey[]>`UPDATE projects SET ${tx(changes as Record<string, string | boolean | number>, keys as string[])}
          WHERE id = ${projectId} AND deleted_at IS NULL RETURNING ${tx(ROW_COLUMNS as string[])}`;
    if (!row) throw errors.notFound('Project not found.');
    if (keys.length > 0) {
      await appendChanges(tx, [{ projectId, kind: 'project', entityId: String(projectId), op: 'upsert', payload: projectEntity(row) }]);
    }
    return row;
  }) as Promise<ProjectRowWithPreviousKey>;
}

/**
 * Deletes a project (PostHog's ProjectViewSet destroy): it leaves the API at once (404) and every
 * node (a change-log `delete` of its entity, so its keys get 401), and its scheduled changes
 * never run. Its rows (flags, events, …) stay in Postgres, unreachable. An activity entry
 * (scope `Project`, `deleted`) records who did it.
 * @throws ApiError 404 when it is already deleted.
 */
export async function deleteProject(sql: Sql, projectId: number, userId: number): Promise<void> {
  await sql.begin(async (tx) => {
    const [row] = await tx<{ name: string }[]>`UPDATE projects SET deleted_at = clock_timestamp()
      WHERE id = ${projectId} AND deleted_at IS NULL RETURNING name`;
    if (!row) throw errors.notFound('Project not found.');
    await appendChanges(tx, [{ projectId, kind: 'project', entityId: String(projectId), op: 'delete', payload: null }]);
    await writeActivity(tx, { projectId, userId, activity: 'deleted', scope: 'Project', itemId: String(projectId), name: row.name, changes: null });
  });
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
    const [before] = await tx<{ api_token: string; name: string }[]>`SELECT api_token, name FROM projects WHERE id = ${projectId} AND deleted_at IS NULL FOR UPDATE`;
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
