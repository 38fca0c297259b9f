/**
 * A person entity's index fields, read from its msgpack payload (contract/payload.ts codec) without
 * decoding the rest: a node's store needs only `project_id` and `distinct_ids` to index a person
 * (eval-node/store/apply.ts), while decoding the whole entity (its properties) was most of the
 * cost of applying a person change. The control plane writes those two fields
 * before `properties` (contract/entities.ts `personEntity`), so the read stops
 * early; in any order it is still correct, only slower. Values of other keys are skipped with
 * {@link msgpackScan}.
 */
import { msgpackScan } from './msgpack-depth.js';
import { unpackTrusted } from './payload.js';
import { MAX_PAYLOAD_DEPTH } from '../limits.js';

/** The fields a node indexes a person by. */
export interface PersonIndexFields { project_id: number; distinct_ids: string[] }

/** Deepest value decoded here: `distinct_ids` is an array of strings (depth 1), `project_id` a number (0). */
const FIELD_DEPTH = 1;

/** Byte length and offset of the key string at `pos` (fixstr, str8, str16, str32), or null when the key is not a string. */
function keyAt(bytes: Uint8Array, pos: number): { start: number; length: number } | null {
  const t = bytes[pos];
  if (t === undefined) return null;
  if (t >= 0xa0 && t <= 0xbf) return { start: pos + 1, length: t & 0x1f };
  if (t === 0xd9 && pos + 1 < bytes.length) return { start: pos + 2, length: bytes[pos + 1]! };
  if (t === 0xda && pos + 2 < bytes.length) return { start: pos + 3, length: (bytes[pos + 1]! << 8) | bytes[pos + 2]! };
  return null; // str32 keys and non-string keys are not ours
}

/** Whether the key bytes at `k` spell `name` (ASCII). */
function keyIs(bytes: Uint8Array, k: { start: number; length: number }, name: string): boolean {
  if (k.length !== name.length || k.start + k.length > bytes.length) return false;
  for (let i = 0; i < name.length; i++) if (bytes[k.start + i] !== name.charCodeAt(i)) return false;
  return true;
}

/**
 * `project_id` and `distinct_ids` of the person encoded in `bytes` (a msgpack map), or null
 * when `bytes` is not a map holding both with the right types (then decode it whole). Never
 * throws: malformed bytes give null.
 */
export function personIndexFields(bytes: Uint8Array): PersonIndexFields | null {
  try {
    const t = bytes[0];
    let pos: number;
    let entries: number;
    if (t === undefined) return null;
    if (t >= 0x80 && t <= 0x8f) { entries = t & 0x0f; pos = 1; }
    else if (t === 0xde && bytes.length >= 3) { entries = (bytes[1]! << 8) | bytes[2]!; pos = 3; }
    else return null;
    let projectId: unknown;
    let distinctIds: unknown;
    for (let i = 0; i < entries && (projectId === undefined || distinctIds === undefined); i++) {
      const key = keyAt(bytes, pos);
      const keyEnd = msgpackScan(bytes, pos, 0).end;
      if (keyEnd < 0) return null; // a container as a key
      const isProject = key !== null && keyIs(bytes, key, 'project_id');
      const isIds = !isProject && key !== null && keyIs(bytes, key, 'distinct_ids');
      // Our fields are shallow; any other value is only skipped (deeper than the payload bound: give up).
      const valueEnd = msgpackScan(bytes, keyEnd, isProject || isIds ? FIELD_DEPTH : MAX_PAYLOAD_DEPTH).end;
      if (valueEnd < 0) return null;
      if (isProject) projectId = unpackTrusted(bytes.subarray(keyEnd, valueEnd));
      else if (isIds) distinctIds = unpackTrusted(bytes.subarray(keyEnd, valueEnd));
      pos = valueEnd;
    }
    if (typeof projectId !== 'number' || !Array.isArray(distinctIds) || !distinctIds.every((d) => typeof d === 'string')) return null;
    return { project_id: projectId, distinct_ids: distinctIds as string[] };
  } catch {
    return null;
  }
}
