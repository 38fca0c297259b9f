/**
 * Change-log rows and snapshot entities → `Change` messages of proto/switchyard.proto
 * (revision and project id as int64 strings, payload as msgpack, empty for deletes).
 */
import { encodePayload, PayloadError, UNENCODABLE_PAYLOAD } from '../../contract/payload.js';
import { formatRevision, type ChangeMessage } from '../../contract/messages.js';
import type { ChangeRow } from '../change-log/store.js';

/**
 * Builds one Change; `projectId` null (cluster-wide) goes out as 0. An entity too deep to
 * encode (stored before the edge bounded depth) goes out with
 * {@link UNENCODABLE_PAYLOAD}, which nodes skip and report, instead of failing the stream.
 */
export function changeMessage(revision: number, kind: string, entityId: string, projectId: number | null, op: 'upsert' | 'delete', payload: unknown): ChangeMessage {
  return {
    revision: formatRevision(revision),
    kind,
    entity_id: entityId,
    project_id: projectId === null ? '0' : String(projectId),
    op: op === 'upsert' ? 'UPSERT' : 'DELETE',
    payload: op === 'upsert' ? encodeOrMark(payload) : Buffer.alloc(0),
  };
}

/** msgpack of an entity, or {@link UNENCODABLE_PAYLOAD} when it nests too deep (see {@link changeMessage}). */
export function encodeOrMark(payload: unknown): Buffer {
  try {
    return encodePayload(payload);
  } catch (e) {
    if (e instanceof PayloadError) return UNENCODABLE_PAYLOAD;
    throw e;
  }
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

