/**
 * msgpack codec for free-form JSON inside protobuf messages (entity payloads, event batches):
 * DESIGN.md "Free-form JSON travels as msgpack bytes". One Packr with records disabled, so the
 * bytes are plain msgpack any decoder reads, with no shared-structure state between messages.
 * The node's LMDB store keeps entities in the same encoding (store/lmdb.ts), so what arrives is
 * stored byte for byte.
 *
 * Two hazards of msgpackr are handled here:
 * - depth: its (un)packer recurses once per level and overflows the stack near 1,250 levels;
 *   values deeper than {@link MAX_PAYLOAD_DEPTH} are refused with {@link PayloadError} on both
 *   sides (measured iteratively: limits.ts `jsonDepth`, msgpack-depth.ts);
 * - `__proto__`: when it unpacks a map into an object it renames a `__proto__` key to
 *   `__proto_`. Bytes that contain the string `__proto__` anywhere (a memchr-speed check) are
 *   decoded through Maps instead, and the key is restored as an own data property
 *   (`Object.defineProperty`), so it survives byte-exact and no prototype is ever touched.
 */
import { Packr } from 'msgpackr';
import { jsonDepth, MAX_PAYLOAD_DEPTH } from '../limits.js';
import { msgpackDepth } from './msgpack-depth.js';

export { MAX_PAYLOAD_DEPTH };

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
const mapUnpackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: false });
const PROTO_KEY = Buffer.from('__proto__', 'utf8');

/** A value that cannot be carried: too deep, or bytes that are not one msgpack value. */
export class PayloadError extends Error {
  constructor(message: string) { super(message); this.name = 'PayloadError'; }
}

/**
 * Payload sent in place of an entity the control plane cannot encode (too deep: stored before
 * the edge bounded it). 0xc1 is the tag msgpack never uses, so no real value looks like it; a
 * node's {@link decodePayload} refuses it and the node skips and reports the change.
 */
export const UNENCODABLE_PAYLOAD: Buffer = Buffer.from([0xc1]);

/**
 * JSON-like value → msgpack bytes.
 * @throws PayloadError when `value` nests deeper than {@link MAX_PAYLOAD_DEPTH}.
 */
export function encodePayload(value: unknown): Buffer {
  // A value shallower than the bound cannot overflow the packer: check only what could.
  if (typeof value === 'object' && value !== null && jsonDepth(value, MAX_PAYLOAD_DEPTH) > MAX_PAYLOAD_DEPTH) {
    throw new PayloadError(`payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels`);
  }
  return packr.pack(value);
}

/**
 * msgpack bytes → value; empty bytes decode to null (DELETE changes carry no payload).
 * @throws PayloadError when the bytes nest deeper than {@link MAX_PAYLOAD_DEPTH} or are not
 * msgpack (truncated, unknown tag).
 */
export function decodePayload(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  if (bytes.length === 1 && bytes[0] === 0xc1) throw new PayloadError('the control plane could not encode this entity (too deep)');
  // Each level costs at least one byte: shorter payloads cannot be too deep.
  if (bytes.length > MAX_PAYLOAD_DEPTH) {
    let depth: number;
    try { depth = msgpackDepth(bytes, MAX_PAYLOAD_DEPTH); } catch (e) { throw new PayloadError((e as Error).message); }
    if (depth > MAX_PAYLOAD_DEPTH) throw new PayloadError(`payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels`);
  }
  try {
    return unpackTrusted(bytes);
  } catch (e) {
    throw new PayloadError(`payload is not valid msgpack: ${(e as Error).message}`);
  }
}

/**
 * Decodes bytes this codec wrote (the node's own LMDB values): no depth scan, since nothing
 * deeper than {@link MAX_PAYLOAD_DEPTH} is ever encoded; `__proto__` keys restored.
 * @throws whatever msgpackr throws on malformed bytes.
 */
export function unpackTrusted(bytes: Uint8Array): unknown {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.indexOf(PROTO_KEY) === -1) return packr.unpack(buf);
  return fromMaps(mapUnpackr.unpack(buf));
}

/** Maps (from a `mapsAsObjects: false` unpack) → plain objects; `__proto__` kept as an own key. */
function fromMaps(v: unknown): unknown {
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, val] of v) {
      const key = String(k);
      const out = fromMaps(val);
      if (key === '__proto__') Object.defineProperty(o, key, { value: out, enumerable: true, writable: true, configurable: true });
      else o[key] = out;
    }
    return o;
  }
  if (Array.isArray(v)) return v.map(fromMaps);
  return v;
}
