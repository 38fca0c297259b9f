/**
 * The capture-owned part of a Watch snapshot: persons (with all their distinct ids), groups
 * and hash-key overrides, in the same shapes as their change-log entries (entities.ts).
 * Call it from the snapshot builder inside its REPEATABLE READ transaction, after the
 * group-type mappings; rows are read through cursors of {@link CAPTURE_SNAPSHOT_CURSOR_ROWS}.
 *
 * Wiring (control-plane/grpc/snapshot.ts of the `node` branch), as the last step of
 * `streamSnapshot`: `await streamCaptureEntities(tx, (e) => sink.entity(e));`
 */
import type { Tx } from '../db/connect.js';
import {
  groupEntity, groupEntityId, hashKeyOverrideEntityId, personEntity, type EntityKind, type GroupEntity,
} from '../change-log/entities.js';

/** Rows fetched per cursor round trip. */
export const CAPTURE_SNAPSHOT_CURSOR_ROWS = 500;

/** One snapshot entity (always an upsert), as the snapshot builder's sink takes it. */
export interface CaptureSnapshotEntity { kind: EntityKind; entityId: string; projectId: number; payload: unknown }

/** Emits every person, group and hash-key override; the sink may return a promise (backpressure). */
export async function streamCaptureEntities(tx: Tx, emit: (e: CaptureSnapshotEntity) => void | Promise<void>): Promise<void> {
  const persons = tx<{ uuid: string; project_id: number; properties: Record<string, unknown>; distinct_ids: string[]; cohort_ids: string[] }[]>`
    SELECT p.uuid, p.project_id, p.properties,
      ARRAY(SELECT cp.cohort_id FROM cohort_people cp WHERE cp.person_id = p.id ORDER BY cp.cohort_id) AS cohort_ids,
      coalesce(array_agg(d.distinct_id) FILTER (WHERE d.distinct_id IS NOT NULL), '{}') AS distinct_ids
    FROM persons p LEFT JOIN person_distinct_ids d ON d.person_id = p.id
    GROUP BY p.id ORDER BY p.id`.cursor(CAPTURE_SNAPSHOT_CURSOR_ROWS);
  for await (const rows of persons) {
    for (const r of rows) await emit({ kind: 'person', entityId: r.uuid, projectId: r.project_id, payload: personEntity(r, r.distinct_ids) });
  }
  const groups = tx<GroupEntity[]>`SELECT project_id, group_type_index, group_key, properties FROM groups
    ORDER BY project_id, group_type_index, group_key`.cursor(CAPTURE_SNAPSHOT_CURSOR_ROWS);
  for await (const rows of groups) {
    for (const r of rows) {
      await emit({ kind: 'group', entityId: groupEntityId(r.project_id, r.group_type_index, r.group_key), projectId: r.project_id, payload: groupEntity(r) });
    }
  }
  const overrides = tx<{ project_id: number; person_uuid: string; feature_flag_key: string; hash_key: string }[]>`
    SELECT o.project_id, p.uuid AS person_uuid, o.feature_flag_key, o.hash_key
    FROM feature_flag_hash_key_overrides o JOIN persons p ON p.id = o.person_id
    ORDER BY o.project_id, o.person_id, o.feature_flag_key`.cursor(CAPTURE_SNAPSHOT_CURSOR_ROWS);
  for await (const rows of overrides) {
    for (const r of rows) {
      await emit({ kind: 'hash_key_override', entityId: hashKeyOverrideEntityId(r.project_id, r.person_uuid, r.feature_flag_key), projectId: r.project_id,
        payload: { project_id: r.project_id, person_id: r.person_uuid, feature_flag_key: r.feature_flag_key, hash_key: r.hash_key } });
    }
  }
}
