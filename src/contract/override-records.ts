/**
 * The hash-key override record (experience continuity, research/posthog-flag-evaluation.md §2.6):
 * how a node's /flags path asks the control plane to persist hash-key overrides, through the
 * same durable capture outbox and gRPC `Ingest` stream as captured events.
 *
 * Form: a {@link CapturedEvent} with
 * ```
 * { uuid, project_id, timestamp, distinct_id,                  // distinct_id = the request's
 *   event: '$feature_flag_hash_key_override',
 *   properties: { distinct_ids: [distinct_id, anon_id], flag_keys: [...], hash_key: anon_id },
 *   $internal: 'hash_key_override' }                            // the marker (see below)
 * ```
 * The top-level `$internal` field is the proof of origin: capture (eval-node/capture/events.ts)
 * builds every client event from an explicit list of fields, so a client can never set it, and
 * the capture handler rejects the event name with 400 besides. Ingestion (service.ts) applies a
 * record with `writeHashKeyOverridesTx` in the batch's transaction, after the batch's person
 * work, and never stores it as an event nor as an event definition; a record without the marker,
 * or with malformed fields, is counted `invalid` and skipped.
 */
import { MAX_KEY_CHARS, MAX_NAME_CHARS, isObject, isUuid, type CapturedEvent } from './events.js';

/** Event name of a hash-key override record. */
export const HASH_KEY_OVERRIDE_EVENT = '$feature_flag_hash_key_override';
/** Top-level marker field of internal records (never copied from client payloads). */
export const INTERNAL_FIELD = '$internal';
/** Value of {@link INTERNAL_FIELD} on hash-key override records. */
export const HASH_KEY_OVERRIDE_MARK = 'hash_key_override';

/** A decoded, validated record. */
export interface HashKeyOverrideRecord {
  projectId: number;
  distinctIds: string[];
  flagKeys: string[];
  hashKey: string;
}

/** Builds the record a node appends to its capture outbox. */
export function hashKeyOverrideRecord(opts: {
  uuid: string; projectId: number; distinctId: string; anonDistinctId: string; flagKeys: readonly string[]; timestamp: string;
}): CapturedEvent {
  return {
    uuid: opts.uuid,
    project_id: opts.projectId,
    event: HASH_KEY_OVERRIDE_EVENT,
    distinct_id: opts.distinctId,
    properties: { distinct_ids: [opts.distinctId, opts.anonDistinctId], flag_keys: [...opts.flagKeys], hash_key: opts.anonDistinctId },
    timestamp: opts.timestamp,
    [INTERNAL_FIELD]: HASH_KEY_OVERRIDE_MARK,
  };
}

/** True when `raw` claims to be a hash-key override record (by name), marked or not. */
export function isHashKeyOverrideEvent(raw: unknown): boolean {
  return isObject(raw) && raw.event === HASH_KEY_OVERRIDE_EVENT;
}

const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

/**
 * Validates a record as it arrives in an Ingest batch. Null when unmarked or malformed (bad
 * project id, more than 2 distinct ids or 1000 flag keys, empty or over-long strings).
 */
export function parseHashKeyOverrideRecord(raw: unknown): HashKeyOverrideRecord | null {
  if (!isObject(raw) || raw.event !== HASH_KEY_OVERRIDE_EVENT || raw[INTERNAL_FIELD] !== HASH_KEY_OVERRIDE_MARK) return null;
  const { project_id: projectId, properties: p } = raw;
  if (!isUuid(raw.uuid) || typeof projectId !== 'number' || !Number.isSafeInteger(projectId) || projectId <= 0 || !isObject(p)) return null;
  const { distinct_ids: ids, flag_keys: keys, hash_key: hashKey } = p;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > 2 || !ids.every((d) => isText(d, MAX_NAME_CHARS))) return null;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > 1000 || !keys.every((k) => isText(k, MAX_KEY_CHARS))) return null;
  if (!isText(hashKey, MAX_NAME_CHARS)) return null;
  return { projectId, distinctIds: [...new Set(ids as string[])], flagKeys: [...new Set(keys as string[])], hashKey };
}
