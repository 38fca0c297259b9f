/**
 * Full-state snapshot for the gRPC Watch stream (DESIGN.md "Control plane"): every entity an
 * evaluation node keeps, read in ONE `REPEATABLE READ, READ ONLY` transaction together with the
 * change-log head, so the entity rows are exactly the state after applying every change up to
 * and including that revision (writers append to change_log in the same transaction as their
 * row writes, and revisions become visible in order: change-log/store.ts). The tail then
 * continues with revision > the snapshot's.
 *
 * Contents and choices:
 * - organizations (with their quota fields), projects, group type mappings;
 * - feature flags and cohorts that are NOT soft-deleted: deleted ones are never evaluated, and
 *   a node drops a flag or cohort whose upsert says `deleted: true` (eval-node/store/apply.ts),
 *   so a node's state is the same whether it came from a snapshot or from the tail;
 * - personal API keys of active users (hash, scopes, scoped projects, organization);
 * - persons (with every distinct id), groups and hash-key overrides (ingestion/snapshot.ts).
 *
 * Only the columns the entities need are selected: row parsing dominates the read (all 28 flag
 * columns, with timestamps and arrays, cost about twice as much).
 * Rows are read through cursors of {@link SNAPSHOT_CURSOR_ROWS} and handed to the sink one at
 * a time; the sink may apply backpressure by returning a promise.
 */
import type { Sql } from '../db/connect.js';
import type { EntityKind, FeatureFlagRow, ProjectEntityRow } from '../change-log/entities.js';
import {
  cohortEntity, featureFlagEntity, groupTypeMappingEntity, groupTypeMappingId, PROJECT_SETTING_KEYS, projectEntity,
} from '../change-log/entities.js';
import { personalApiKeyEntity } from '../keys/store.js';
import { streamCaptureEntities } from '../ingestion/snapshot.js';
import { organizationEntity } from '../quota/service.js';

/** Rows fetched per cursor round trip. */
export const SNAPSHOT_CURSOR_ROWS = 500;

/** One entity of a snapshot (always an upsert). `projectId` null = cluster-wide. */
export interface SnapshotEntity { kind: EntityKind; entityId: string; projectId: number | null; payload: unknown }

/** Receives a snapshot: `begin` once with its revision, then every entity. */
export interface SnapshotSink {
  begin(revision: number): void | Promise<void>;
  entity(e: SnapshotEntity): void | Promise<void>;
}

async function each<T>(batches: AsyncIterable<T[]>, fn: (row: T) => void | Promise<void>): Promise<void> {
  for await (const rows of batches) {
    for (const row of rows) await fn(row);
  }
}

/**
 * Streams a consistent snapshot into `sink`; resolves with its revision (0 on an empty log).
 * @throws the driver's error when Postgres fails, or whatever the sink throws (the read
 *   transaction is rolled back either way).
 */
export async function streamSnapshot(sql: Sql, sink: SnapshotSink): Promise<number> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const [head] = await tx<{ r: number }[]>`SELECT coalesce(max(revision), 0)::bigint AS r FROM change_log`;
    const revision = Number(head!.r);
    await sink.begin(revision);
    await each(tx<{ id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }[]>`
      SELECT id, name, monthly_flag_requests_limit, quota_limited FROM organizations ORDER BY id`.cursor(SNAPSHOT_CURSOR_ROWS), (r) =>
      sink.entity({ kind: 'organization', entityId: String(r.id), projectId: null, payload: organizationEntity(r) }));
    await each(tx<ProjectEntityRow[]>`SELECT id, organization_id, name, api_token, timezone, ${tx(PROJECT_SETTING_KEYS as string[])} FROM projects ORDER BY id`.cursor(SNAPSHOT_CURSOR_ROWS), (r) =>
        sink.entity({ kind: 'project', entityId: String(r.id), projectId: r.id, payload: projectEntity(r) }));
    await each(tx<{ project_id: number; group_type: string; group_type_index: number }[]>`SELECT project_id, group_type, group_type_index FROM group_type_mappings ORDER BY project_id, group_type_index`.cursor(SNAPSHOT_CURSOR_ROWS), (r) =>
        sink.entity({ kind: 'group_type_mapping', entityId: groupTypeMappingId(r.project_id, r.group_type_index), projectId: r.project_id, payload: groupTypeMappingEntity(r) }));
    await each(tx<{ id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }[]>`SELECT id, project_id, name, filters, is_static, deleted FROM cohorts WHERE NOT deleted ORDER BY id`.cursor(SNAPSHOT_CURSOR_ROWS), (r) =>
        sink.entity({ kind: 'cohort', entityId: String(r.id), projectId: r.project_id, payload: cohortEntity(r) }));
    await each(tx<FeatureFlagRow[]>`
      SELECT id, project_id, key, name, filters, deleted, active, version, ensure_experience_continuity, evaluation_runtime,
        evaluation_tags, bucketing_identifier, has_encrypted_payloads, is_remote_configuration
      FROM feature_flags WHERE NOT deleted ORDER BY id`.cursor(SNAPSHOT_CURSOR_ROWS), (r) =>
      sink.entity({ kind: 'feature_flag', entityId: String(r.id), projectId: r.project_id, payload: featureFlagEntity(r) }));
    await each(tx<{ id: string; organization_id: number; secure_value: string; scopes: string[]; scoped_teams: number[] }[]>`SELECT k.id, u.organization_id, k.secure_value, k.scopes, k.scoped_teams
         FROM personal_api_keys k JOIN users u ON u.id = k.user_id WHERE u.is_active ORDER BY k.id`.cursor(SNAPSHOT_CURSOR_ROWS), (r) =>
        sink.entity({ kind: 'personal_api_key', entityId: r.id, projectId: null, payload: personalApiKeyEntity(r) }));
    await streamCaptureEntities(tx, (e) => sink.entity(e));
    return revision;
  }) as Promise<number>;
}

/** Tables whose rows become snapshot entities (those that do not exist yet are ignored). */
export const SNAPSHOT_TABLES: readonly string[] = [
  'organizations', 'projects', 'group_type_mappings', 'cohorts', 'feature_flags', 'personal_api_keys',
  'persons', 'groups', 'feature_flag_hash_key_overrides',
];

/**
 * Approximate number of entities a snapshot would send: the planner's `reltuples` of
 * {@link SNAPSHOT_TABLES} (a catalog read, no table scan; 0 for tables never analysed).
 */
export async function estimateSnapshotRows(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::float8 AS n
    FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
    WHERE c.relkind = 'r' AND ns.nspname = current_schema() AND c.relname = ANY(${SNAPSHOT_TABLES as string[]})`;
  return Number(row?.n ?? 0);
}
