/**
 * Ids as LMDB key parts: LMDB refuses keys over 1,978 bytes, and ids inside
 * keys (distinct ids, group keys, project tokens, entity ids) come from public input. An id up
 * to {@link MAX_KEY_PART_CHARS} code units is used as it is (the common case costs one length
 * check); a longer one is replaced by `"\u0000sha256:" + base64url(SHA-256(id))`, 52 bytes.
 *
 * Collisions: the digest form starts with NUL, which no accepted id contains (the edge refuses
 * NUL), and readers of a digest key check the full id kept in the value
 * ({@link wasDigested} tells them when), so a lookup never answers for a different id.
 */
import { createHash } from 'node:crypto';
import { MAX_KEY_PART_CHARS } from '../../limits.js';

/** `id` as it appears inside an LMDB key (see the module doc). */
export function keyPart(id: string): string {
  if (id.length <= MAX_KEY_PART_CHARS) return id;
  return `\u0000sha256:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;
}

/** True when {@link keyPart} replaced `id` by its digest (the reader must compare full ids). */
export function wasDigested(id: string): boolean {
  return id.length > MAX_KEY_PART_CHARS;
}
