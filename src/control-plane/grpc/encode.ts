/**
 * Change-log rows and snapshot entities → `Change` messages of proto/switchyard.proto
 * (revision and project id as int64 strings, payload as msgpack, empty for deletes).
 */
import { encodePayload } from '../../grpc/payload.js';
import { formatRevision, type ChangeMessage } from '../../grpc/messages.js';
import type { ChangeRow } from '../change-log/store.js';

/** Builds one Change; `projectId` null (cluster-wide) goes out as 0. */
export function changeMessage(revision: number, kind: string, entityId: string, projectId: number | null, op: 'upsert' | 'delete', payload: unknown): ChangeMessage {
  return {
    revision: formatRevision(revision),
    kind,
    entity_id: entityId,
    project_id: projectId === null ? '0' : String(projectId),
    op: op === 'upsert' ? 'UPSERT' : 'DELETE',
    payload: op === 'upsert' ? encodePayload(payload) : Buffer.alloc(0),
  };
}

const encoded = new WeakMap<ChangeRow, ChangeMessage>();

/**
 * The Change of a change-log row, memoised per row object: the feed's window hands the same
 * rows to every stream, so each change is msgpack-encoded once however many nodes watch.
 */
export function tailMessage(r: ChangeRow): ChangeMessage {
  let m = encoded.get(r);
  if (m === undefined) {
    m = changeMessage(r.revision, r.kind, r.entity_id, r.project_id, r.op, r.payload);
    encoded.set(r, m);
  }
  return m;
}

