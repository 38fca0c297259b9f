/**
 * The msgpack envelope of a paged snapshot (proto/switchyard.proto `SnapshotChunk`,
 * `SnapshotResume`): a chunk's `entities` (an array of [kind, entity_id, project_id,
 * payload-bin, distinct ids?] tuples, control-plane/grpc/snapshot.ts) and a snapshot cursor
 * (`[source, key | null]`). One codec for both sides, so the control plane's encoder and the
 * node's decoder (eval-node/sync/decode.ts) cannot drift apart. Plain msgpack (no records): the
 * envelope holds arrays, strings, numbers and bins only; entity payloads inside it are encoded
 * with contract/payload.ts.
 */
import { Packr } from 'msgpackr';

const envelope = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** An envelope value (arrays of strings, numbers, bins, null) → msgpack bytes. */
export function packEnvelope(value: readonly unknown[]): Buffer {
  return envelope.pack(value);
}

/**
 * msgpack bytes → the envelope value (not checked: callers validate its shape).
 * @throws whatever msgpackr throws on bytes that are not msgpack.
 */
export function unpackEnvelope(bytes: Uint8Array): unknown {
  return envelope.unpack(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}
