/**
 * Watch messages → store changes (sync/client.ts's decoding, one job): tail Changes and the
 * entities of SnapshotChunks (control-plane/grpc/snapshot.ts for the envelope) become
 * {@link StoreChange}s with their payload bytes kept, to be stored as they arrived.
 */
import { decodePayload, UNENCODABLE_PAYLOAD } from '../../contract/payload.js';
import { unpackEnvelope } from '../../contract/snapshot-envelope.js';
import { personIndexFields } from '../../contract/person-index-fields.js';
import { parseRevision, type ChangeMessage, type SnapshotChunkMessage, type WatchEvent } from '../../contract/messages.js';
import type { StoreChange } from '../store/lmdb.js';

/**
 * Watch event → store change (the payload bytes kept to be stored as they are). A person upsert
 * is not decoded whole: its index entries need only its project and distinct ids, which a
 * snapshot chunk carries beside the payload and a tail change has read from the payload's first
 * fields (contract/person-index-fields.ts); its bytes are stored as they arrived (the control plane
 * encoded them within the depth bound; only its too-deep marker is refused here). A person whose
 * fields cannot be read that way is decoded whole, as every other entity.
 * @throws RevisionError on a malformed revision, PayloadError on a payload that does not decode.
 */
export function toStoreChange(c: ChunkChangeMessage): StoreChange {
  const projectId = parseRevision(c.project_id);
  if (c.kind === 'person' && c.op !== 'DELETE' && !UNENCODABLE_PAYLOAD.equals(c.payload)) {
    const fields = c.distinct_ids !== undefined ? { project_id: projectId, distinct_ids: c.distinct_ids } : personIndexFields(c.payload);
    if (fields) return { kind: c.kind, entityId: c.entity_id, projectId, op: 'upsert', payload: fields, raw: c.payload };
  }
  const del = c.op === 'DELETE';
  return {
    kind: c.kind,
    entityId: c.entity_id,
    projectId: projectId === 0 ? null : projectId,
    op: del ? 'delete' : 'upsert',
    payload: del ? null : decodePayload(c.payload),
    ...(del ? {} : { raw: c.payload }),
  };
}

/**
 * What a SnapshotChunk counts for in the queue bound (its entities are not counted before it is
 * decoded): the server's largest chunk, so a paused stream holds a few chunks at most.
 */
export const CHUNK_QUEUE_WEIGHT = 5_000;

/** Changes an event adds to the client's queue bound (sync/client.ts QUEUE_HIGH_WATER). */
export function queueWeight(ev: WatchEvent): number {
  if (ev.event === 'change') return 1;
  if (ev.event === 'changes') return ev.changes.changes.length;
  return ev.event === 'snapshot_chunk' ? CHUNK_QUEUE_WEIGHT : 0;
}

/** A snapshot entity as it travels in a chunk: [kind, entity_id, project_id, payload, distinct ids (persons)]. */
type ChunkTuple = [string, string, number, Uint8Array, string[]?];

/** A chunk entity as a Change, with a person's distinct ids when the chunk carried them. */
export type ChunkChangeMessage = ChangeMessage & { distinct_ids?: readonly string[] };

/**
 * The entities of a SnapshotChunk (control-plane/grpc/snapshot.ts) as Change messages, for the
 * same decode-or-skip path as the tail. @throws when the envelope is not an array of tuples.
 */
export function chunkChanges(chunk: SnapshotChunkMessage, revision: number): ChunkChangeMessage[] {
  // The envelope's payloads are bins, decoded one by one with decodePayload.
  const tuples = unpackEnvelope(chunk.entities);
  if (!Array.isArray(tuples)) throw new Error('SnapshotChunk.entities is not a msgpack array');
  const rev = String(revision);
  return (tuples as ChunkTuple[]).map((t) => {
    if (!Array.isArray(t) || (t.length !== 4 && t.length !== 5) || typeof t[0] !== 'string' || typeof t[1] !== 'string' || typeof t[2] !== 'number' || !(t[3] instanceof Uint8Array)) {
      throw new Error('SnapshotChunk entity is not [kind, entity_id, project_id, payload, distinct ids?]');
    }
    const payload = Buffer.isBuffer(t[3]) ? t[3] : Buffer.from(t[3].buffer, t[3].byteOffset, t[3].byteLength);
    const m: ChunkChangeMessage = { revision: rev, kind: t[0], entity_id: t[1], project_id: String(t[2]), op: 'UPSERT', payload };
    if (t.length === 5 && Array.isArray(t[4]) && t[4].every((d) => typeof d === 'string')) m.distinct_ids = t[4];
    return m;
  });
}
