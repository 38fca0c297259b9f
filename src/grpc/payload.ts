/**
 * msgpack codec for free-form JSON inside protobuf messages (entity payloads, event batches):
 * DESIGN.md "Free-form JSON travels as msgpack bytes". One Packr with records disabled, so the
 * bytes are plain msgpack any decoder reads, with no shared-structure state between messages.
 */
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** JSON-like value → msgpack bytes. */
export function encodePayload(value: unknown): Buffer {
  return packr.pack(value);
}

/** msgpack bytes → value; empty bytes decode to null (DELETE changes carry no payload). */
export function decodePayload(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  return packr.unpack(bytes);
}
