/**
 * A short memory of presented personal API keys that matched no active key, so a client
 * repeating a wrong key (a stale key in a polling SDK, a scan) costs one database lookup per
 * {@link UNKNOWN_KEY_TTL_MS}, not one per request. Keys are remembered by their hash, never their
 * value. Creating a key forgets its hash at once (./store.ts), so a key created after a miss works
 * on its next request; a key made known another way (another control plane, a direct insert)
 * works once the entry expires. Revocation is unaffected: only misses are remembered.
 */

import { ExpiringSet } from './expiring-set.js';

/** How long a miss is remembered, in ms. */
export const UNKNOWN_KEY_TTL_MS = 5_000;
/** Most misses remembered; past it the oldest are dropped (a scan of random keys evicts itself). */
export const UNKNOWN_KEYS_REMEMBERED = 10_000;

/** The process' memory of unknown keys (by hash), shared by every authentication of the control plane. */
export const unknownKeys = new ExpiringSet(UNKNOWN_KEY_TTL_MS, UNKNOWN_KEYS_REMEMBERED);
