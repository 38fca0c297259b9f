/**
 * Nesting depth of msgpack bytes, measured without decoding: msgpackr's
 * unpacker recurses once per level and overflows the call stack near 1,250 levels, so a
 * payload is measured here first, iteratively, and refused above a bound instead of crashing
 * whoever decodes it. Format: https://github.com/msgpack/msgpack/blob/master/spec.md.
 */

/** Thrown for bytes that end inside a value or use the reserved tag 0xc1. */
export class MsgpackFormatError extends Error {
  constructor(message: string) { super(message); this.name = 'MsgpackFormatError'; }
}

/**
 * Depth of the msgpack value at the start of `bytes` (0 for a scalar, 1 for an empty map or
 * array, 1 + the deepest child otherwise), stopping at `limit + 1` as soon as the value is
 * known to be deeper than `limit`. Cost: one pass over the bytes, O(depth) memory.
 * @throws MsgpackFormatError on truncated or malformed bytes.
 */
export function msgpackDepth(bytes: Uint8Array, limit: number): number {
  return msgpackScan(bytes, 0, limit).depth;
}

/**
 * Scans the one msgpack value that starts at `start`: where it ends (`end`, exclusive) and how
 * deep it is (`depth`, as {@link msgpackDepth}). When the value is deeper than `limit` the scan
 * stops early with `depth` = `limit + 1` and `end` = -1 (the end is not known).
 * @throws MsgpackFormatError on truncated or malformed bytes.
 */
export function msgpackScan(bytes: Uint8Array, start: number, limit: number): { end: number; depth: number } {
  const n = bytes.length;
  /** Items still to read in each open container (maps count keys and values). */
  const open: number[] = [];
  let max = 0;
  let pos = start;
  const need = (k: number): void => { if (pos + k > n) throw new MsgpackFormatError('msgpack value is truncated'); };
  const be = (at: number, width: 1 | 2 | 4): number =>
    width === 1 ? bytes[at]! : width === 2 ? (bytes[at]! << 8) | bytes[at + 1]! : ((bytes[at]! * 0x1000000) + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!));
  do {
    need(1);
    const t = bytes[pos++]!;
    let items = -1; // -1: a scalar; else a container holding `items` values
    if (t <= 0x7f || t >= 0xe0 || (t >= 0xc0 && t <= 0xc3)) { if (t === 0xc1) throw new MsgpackFormatError('reserved msgpack tag 0xc1'); }
    else if (t <= 0x8f) items = (t & 0x0f) * 2;
    else if (t <= 0x9f) items = t & 0x0f;
    else if (t <= 0xbf) { need(t & 0x1f); pos += t & 0x1f; }
    else {
      switch (t) {
        case 0xc4: case 0xd9: { need(1); const l = be(pos, 1); pos += 1; need(l); pos += l; break; }
        case 0xc5: case 0xda: { need(2); const l = be(pos, 2); pos += 2; need(l); pos += l; break; }
        case 0xc6: case 0xdb: { need(4); const l = be(pos, 4); pos += 4; need(l); pos += l; break; }
        case 0xc7: { need(2); const l = be(pos, 1); pos += 2; need(l); pos += l; break; }
        case 0xc8: { need(3); const l = be(pos, 2); pos += 3; need(l); pos += l; break; }
        case 0xc9: { need(5); const l = be(pos, 4); pos += 5; need(l); pos += l; break; }
        case 0xca: case 0xce: case 0xd2: need(4); pos += 4; break;
        case 0xcb: case 0xcf: case 0xd3: need(8); pos += 8; break;
        case 0xcc: case 0xd0: need(1); pos += 1; break;
        case 0xcd: case 0xd1: need(2); pos += 2; break;
        case 0xd4: need(2); pos += 2; break;
        case 0xd5: need(3); pos += 3; break;
        case 0xd6: need(5); pos += 5; break;
        case 0xd7: need(9); pos += 9; break;
        case 0xd8: need(17); pos += 17; break;
        case 0xdc: need(2); items = be(pos, 2); pos += 2; break;
        case 0xdd: need(4); items = be(pos, 4); pos += 4; break;
        case 0xde: need(2); items = be(pos, 2) * 2; pos += 2; break;
        case 0xdf: need(4); items = be(pos, 4) * 2; pos += 4; break;
        default: throw new MsgpackFormatError(`unknown msgpack tag 0x${t.toString(16)}`);
      }
    }
    // This value fills one slot of the innermost open container.
    if (open.length > 0) open[open.length - 1]!--;
    if (items >= 0) {
      if (open.length + 1 > max) { max = open.length + 1; if (max > limit) return { end: -1, depth: limit + 1 }; }
      if (items > 0) open.push(items);
    }
    while (open.length > 0 && open[open.length - 1] === 0) open.pop();
  } while (open.length > 0);
  return { end: pos, depth: max };
}

/**
 * Splits msgpack bytes holding one array into its elements' bytes and depths, without decoding
 * them (the scan is iterative, so any depth is measured safely), so a reader can decode each on
 * its own and set aside those it cannot carry. A malformed element ends the split: its end is
 * unknown, so `rest` holds it and everything after it.
 * @returns null when the bytes do not start with a msgpack array.
 */
export function splitMsgpackArray(bytes: Uint8Array): { elements: { bytes: Uint8Array; depth: number }[]; rest: Uint8Array | null } | null {
  if (bytes.length === 0) return null;
  const t = bytes[0]!;
  let count: number;
  let pos: number;
  if (t >= 0x90 && t <= 0x9f) { count = t & 0x0f; pos = 1; }
  else if (t === 0xdc && bytes.length >= 3) { count = (bytes[1]! << 8) | bytes[2]!; pos = 3; }
  else if (t === 0xdd && bytes.length >= 5) { count = (bytes[1]! * 0x1000000) + ((bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!); pos = 5; }
  else return null;
  const elements: { bytes: Uint8Array; depth: number }[] = [];
  for (let i = 0; i < count; i++) {
    let scan: { end: number; depth: number };
    try { scan = msgpackScan(bytes, pos, Infinity); } catch { return { elements, rest: bytes.subarray(pos) }; }
    elements.push({ bytes: bytes.subarray(pos, scan.end), depth: scan.depth });
    pos = scan.end;
  }
  return { elements, rest: pos < bytes.length ? bytes.subarray(pos) : null };
}
