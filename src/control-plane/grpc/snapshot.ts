/**
 * Paged full-state snapshot for the gRPC Watch stream (proto/switchyard.proto `Watch`; DESIGN.md
 * "Control plane").
 *
 * A snapshot starts at R0 = the change-log head and reads every source (below) page by page in
 * key order, each page its own short query: no read transaction is held for the whole copy, so
 * a copy of millions of persons neither pins old row versions (vacuum) nor ties up a connection.
 * A page may show state newer than R0; the Watch handler then replays every change after R0
 * (full entity states, in revision order), which makes the staged state exactly the state at
 * the last revision replayed (watch.ts). Keys are immutable, so an entity that exists
 * throughout is read exactly once; one created or deleted meanwhile is settled by the replay.
 *
 * Sources and contents, in order: organizations (with quota fields), projects, group type
 * mappings, cohorts and feature flags that are NOT soft-deleted (a node drops a flag or cohort
 * whose upsert says `deleted: true`, eval-node/store/apply.ts, so snapshot and tail agree),
 * personal API keys of active users, then persons, groups and hash-key overrides
 * (ingestion/snapshot.ts). Only the columns the entities need are selected.
 *
 * Chunks: entities go out as SnapshotChunk messages of up to {@link CHUNK_MAX_ENTITIES}
 * entities / {@link CHUNK_MAX_BYTES} of payload, `entities` = one msgpack array of
 * [kind, entity_id, project_id, payload-bin] (persons: and their distinct ids, so that a node
 * indexes them without decoding the payload), with the cursor after the chunk's last entity
 * ({@link encodeCursor}) so that a node can resume there.
 */
import type { Sql } from '../db/connect.js';
import type { FeatureFlagRow, ProjectEntityRow } from '../../contract/entities.js';
import {
  cohortEntity, featureFlagEntity, groupTypeMappingEntity, groupTypeMappingId, PROJECT_ENTITY_COLUMNS, PROJECT_SETTING_KEYS, projectEntity,
} from '../../contract/entities.js';
import type { SnapshotCursor, SnapshotKey, SnapshotRow, SnapshotSource } from '../change-log/snapshot-source.js';
import { personalApiKeyEntity } from '../keys/store.js';
import { CAPTURE_SNAPSHOT_SOURCES } from '../ingestion/snapshot.js';
import { organizationEntity } from '../quota/service.js';
import { encodeOrMark } from './encode.js';
import { packEnvelope, unpackEnvelope } from '../../contract/snapshot-envelope.js';

/** Rows read per page query. */
export const SNAPSHOT_PAGE_ROWS = 5_000;
/** Most entities per SnapshotChunk. */
export const CHUNK_MAX_ENTITIES = 5_000;
/** A chunk is closed once its payloads reach this many bytes (clients accept 64 MiB messages). */
export const CHUNK_MAX_BYTES = 2 * 1024 * 1024;

/** A source keyed by one integer id column. */
function byId<R extends { id: number }>(name: string, read: (sql: Sql, after: number, limit: number) => Promise<R[]>,
  toRow: (r: R) => Omit<SnapshotRow, 'key'>): SnapshotSource {
  return {
    name,
    async page(sql, after, limit) {
      const rows = await read(sql, after === null ? 0 : Number(after[0]), limit);
      return rows.map((r) => ({ key: [r.id], ...toRow(r) }));
    },
  };
}

const DEFINITION_SOURCES: readonly SnapshotSource[] = [
  byId('organizations', (sql, after, limit) => sql<{ id: number; name: string; monthly_flag_requests_limit: number | null; quota_limited: boolean }[]>`
    SELECT id, name, monthly_flag_requests_limit, quota_limited FROM organizations WHERE id > ${after} ORDER BY id LIMIT ${limit}`,
  (r) => ({ kind: 'organization', entityId: String(r.id), projectId: null, payload: organizationEntity(r) })),
  byId('projects', (sql, after, limit) => sql<ProjectEntityRow[]>`
    SELECT ${sql([...PROJECT_ENTITY_COLUMNS, ...PROJECT_SETTING_KEYS])} FROM projects WHERE id > ${after} AND deleted_at IS NULL ORDER BY id LIMIT ${limit}`,
  (r) => ({ kind: 'project', entityId: String(r.id), projectId: r.id, payload: projectEntity(r) })),
  {
    name: 'group_type_mappings',
    async page(sql, after, limit) {
      const [p, i] = after === null ? [-1, -1] : [Number(after[0]), Number(after[1])];
      const rows = await sql<{ project_id: number; group_type: string; group_type_index: number }[]>`
        SELECT project_id, group_type, group_type_index FROM group_type_mappings WHERE (project_id, group_type_index) > (${p}, ${i})
        ORDER BY project_id, group_type_index LIMIT ${limit}`;
      return rows.map((r) => ({
        key: [r.project_id, r.group_type_index], kind: 'group_type_mapping' as const,
        entityId: groupTypeMappingId(r.project_id, r.group_type_index), projectId: r.project_id, payload: groupTypeMappingEntity(r),
      }));
    },
  },
  byId('cohorts', (sql, after, limit) => sql<{ id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }[]>`
    SELECT id, project_id, name, filters, is_static, deleted FROM cohorts WHERE NOT deleted AND id > ${after} ORDER BY id LIMIT ${limit}`,
  (r) => ({ kind: 'cohort', entityId: String(r.id), projectId: r.project_id, payload: cohortEntity(r) })),
  byId('feature_flags', (sql, after, limit) => sql<FeatureFlagRow[]>`
    SELECT id, project_id, key, name, filters, deleted, active, version, ensure_experience_continuity, evaluation_runtime,
      evaluation_tags, bucketing_identifier, has_encrypted_payloads, is_remote_configuration
    FROM feature_flags WHERE NOT deleted AND id > ${after} ORDER BY id LIMIT ${limit}`,
  (r) => ({ kind: 'feature_flag', entityId: String(r.id), projectId: r.project_id, payload: featureFlagEntity(r) })),
  {
    name: 'personal_api_keys',
    async page(sql, after, limit) {
      const from = after === null ? '' : String(after[0]);
      const rows = await sql<{ id: string; organization_id: number; secure_value: string; scopes: string[]; scoped_teams: number[] }[]>`
        SELECT k.id, u.organization_id, k.secure_value, k.scopes, k.scoped_teams
        FROM personal_api_keys k JOIN users u ON u.id = k.user_id WHERE u.is_active AND k.id > ${from} ORDER BY k.id LIMIT ${limit}`;
      return rows.map((r) => ({ key: [r.id], kind: 'personal_api_key' as const, entityId: r.id, projectId: null, payload: personalApiKeyEntity(r) }));
    },
  },
];

/** Every source of a snapshot, in order (definitions before the persons that use them). */
export const SNAPSHOT_SOURCES: readonly SnapshotSource[] = [...DEFINITION_SOURCES, ...CAPTURE_SNAPSHOT_SOURCES];

/** The opaque bytes of a cursor (SnapshotChunk.cursor, SnapshotResume.cursor). */
export function encodeCursor(c: SnapshotCursor): Buffer {
  return packEnvelope([c.source, c.after === null ? null : [...c.after]]);
}

/** A cursor a node sent back, or null when the bytes are not one this module wrote. */
export function decodeCursor(bytes: Uint8Array | null | undefined): SnapshotCursor | null {
  if (!bytes || bytes.length === 0 || bytes.length > 4096) return null;
  let v: unknown;
  try { v = unpackEnvelope(bytes); } catch { return null; }
  if (!Array.isArray(v) || v.length !== 2) return null;
  const [source, after] = v as [unknown, unknown];
  if (typeof source !== 'number' || !Number.isInteger(source) || source < 0 || source > SNAPSHOT_SOURCES.length) return null;
  if (after === null) return { source, after: null };
  if (!Array.isArray(after) || after.length === 0 || after.length > 3 || !after.every((k) => typeof k === 'number' || typeof k === 'string')) return null;
  return { source, after: after as SnapshotKey };
}

/** One SnapshotChunk's contents. */
export interface SnapshotChunk { entities: Buffer; cursor: Buffer; count: number }

/**
 * Reads every source from `start` on and hands `emit` chunks (module doc); resolves after the
 * last. `emit` may apply backpressure by returning a promise, and stop the copy by throwing.
 * @throws the driver's error when Postgres fails, or whatever `emit` throws.
 */
export async function streamSnapshotPages(sql: Sql, start: SnapshotCursor, emit: (chunk: SnapshotChunk) => Promise<void>,
  opts: { chunkMaxEntities?: number } = {}): Promise<void> {
  const maxEntities = opts.chunkMaxEntities ?? CHUNK_MAX_ENTITIES;
  let tuples: unknown[] = [];
  let bytes = 0;
  let cursor: SnapshotCursor = start;
  const flush = async (): Promise<void> => {
    if (tuples.length === 0) return;
    const chunk = { entities: packEnvelope(tuples), cursor: encodeCursor(cursor), count: tuples.length };
    tuples = [];
    bytes = 0;
    await emit(chunk);
  };
  for (let s = start.source; s < SNAPSHOT_SOURCES.length; s++) {
    const source = SNAPSHOT_SOURCES[s]!;
    let next = source.page(sql, s === start.source ? start.after : null, SNAPSHOT_PAGE_ROWS);
    for (;;) {
      const rows = await next;
      if (rows.length === 0) break;
      // The next page is read while this one is encoded and sent (Postgres and this process
      // overlap); if the copy stops meanwhile, its result is dropped.
      next = source.page(sql, rows[rows.length - 1]!.key, SNAPSHOT_PAGE_ROWS);
      next.catch(() => { /* surfaced by the await above if the copy goes on */ });
      for (const r of rows) {
        const payload = encodeOrMark(r.payload);
        // A person also carries its distinct ids: all the node needs to index it without decoding it.
        tuples.push(r.kind === 'person'
          ? [r.kind, r.entityId, r.projectId ?? 0, payload, (r.payload as { distinct_ids: string[] }).distinct_ids]
          : [r.kind, r.entityId, r.projectId ?? 0, payload]);
        bytes += payload.length;
        cursor = { source: s, after: r.key };
        if (tuples.length >= maxEntities || bytes >= CHUNK_MAX_BYTES) await flush();
      }
    }
    // The next source starts from its beginning; a chunk still open carries that cursor.
    cursor = { source: s + 1, after: null };
  }
  await flush();
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
