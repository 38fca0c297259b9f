/**
 * Splicing msgpack arrays without decoding them: the shipper joins the stored outbox entries
 * (each a msgpack array of one request's events, outbox.ts `Outbox.pack`) into one batch, the
 * msgpack array of all their events, by writing a new array header and copying each entry's
 * elements as they are. Decoding every event and encoding it again cost the node ~17 µs per
 * event. Format: https://github.com/msgpack/msgpack/blob/master/spec.md (fixarray, array 16,
 * array 32).
 */

/** The element count and header length of the msgpack array at the start of `bytes`; null when it is not one. */
export function arrayHeader(bytes: Uint8Array): { count: number; headerBytes: number } | null {
  const t = bytes[0];
  if (t === undefined) return null;
  if (t >= 0x90 && t <= 0x9f) return { count: t & 0x0f, headerBytes: 1 };
  if (t === 0xdc && bytes.length >= 3) return { count: (bytes[1]! << 8) | bytes[2]!, headerBytes: 3 };
  if (t === 0xdd && bytes.length >= 5) return { count: bytes[1]! * 0x1000000 + ((bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!), headerBytes: 5 };
  return null;
}

/**
 * One msgpack array holding, in order, the elements of every array in `parts` (the smallest
 * header that fits the total count). Null when a part does not start with an array header
 * (the caller then decodes it). Elements are copied byte for byte, not validated.
 */
export function concatMsgpackArrays(parts: readonly Uint8Array[]): Buffer | null {
  let count = 0;
  let bodyBytes = 0;
  const headers: number[] = [];
  for (const p of parts) {
    const h = arrayHeader(p);
    if (h === null) return null;
    count += h.count;
    bodyBytes += p.length - h.headerBytes;
    headers.push(h.headerBytes);
  }
  const headerBytes = count < 16 ? 1 : count < 0x10000 ? 3 : 5;
  const out = Buffer.allocUnsafe(headerBytes + bodyBytes);
  if (headerBytes === 1) out[0] = 0x90 | count;
  else if (headerBytes === 3) { out[0] = 0xdc; out.writeUInt16BE(count, 1); } else { out[0] = 0xdd; out.writeUInt32BE(count, 1); }
  let at = headerBytes;
  parts.forEach((p, i) => { out.set(p.subarray(headers[i]!), at); at += p.length - headers[i]!; });
  return out;
}
