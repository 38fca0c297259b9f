/**
 * The event shape that travels from an evaluation node's capture outbox to the control plane
 * (gRPC `Ingest`, msgpack), and its defensive normalisation on arrival.
 *
 * Nodes validate events before accepting them (spec §4.5); the control plane re-checks the
 * few fields it relies on so that one malformed event can never block a batch: such events
 * are counted as `invalid` and skipped, the rest of the batch is ingested.
 */

/** JSON-like property bag. */
export type Properties = Record<string, unknown>;

/**
 * A captured event as a node ships it. `timestamp` is ISO 8601 (the node resolves PostHog's
 * `timestamp` / `offset` / `sent_at` rules); `uuid` is assigned by the node when the client
 * sent none. `$set` / `$set_once` may also arrive at the top level (older SDKs); they are
 * merged into `properties` like PostHog's `normalizeEvent`.
 */
export interface CapturedEvent {
  uuid: string;
  project_id: number;
  event: string;
  distinct_id: string;
  properties: Properties;
  timestamp: string;
  $set?: Properties;
  $set_once?: Properties;
  [extra: string]: unknown;
}

/** A normalised event ready for ingestion. */
export interface IngestEvent {
  uuid: string;
  projectId: number;
  event: string;
  distinctId: string;
  properties: Properties;
  timestamp: Date;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a plain (non-array, non-null) object. */
export function isObject(v: unknown): v is Properties {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** True for a canonical UUID string (any version). */
export function isUuid(v: unknown): v is string {
  return typeof v === 'string' && UUID_RE.test(v);
}

/**
 * Validates and normalises one event; returns null when it cannot be ingested (bad uuid,
 * project id, name, distinct id or timestamp). Distinct ids given as numbers become strings
 * (PostHog does the same); `$set` / `$set_once` at the top level are merged into properties.
 */
export function normalizeEvent(raw: unknown): IngestEvent | null {
  if (!isObject(raw)) return null;
  const { uuid, project_id: projectId, event, timestamp } = raw;
  let distinctId = raw.distinct_id;
  if (typeof distinctId === 'number' && Number.isFinite(distinctId)) distinctId = String(distinctId);
  if (!isUuid(uuid) || typeof projectId !== 'number' || !Number.isSafeInteger(projectId) || projectId <= 0) return null;
  if (typeof event !== 'string' || event.length === 0 || typeof distinctId !== 'string' || distinctId.length === 0) return null;
  const ts = typeof timestamp === 'string' ? new Date(timestamp) : timestamp instanceof Date ? timestamp : null;
  if (!ts || Number.isNaN(ts.getTime())) return null;
  const properties: Properties = isObject(raw.properties) ? { ...raw.properties } : {};
  if (isObject(raw.$set)) properties.$set = { ...(isObject(properties.$set) ? properties.$set : {}), ...raw.$set };
  if (isObject(raw.$set_once)) properties.$set_once = { ...(isObject(properties.$set_once) ? properties.$set_once : {}), ...raw.$set_once };
  return { uuid: uuid.toLowerCase(), projectId, event, distinctId, properties, timestamp: ts };
}
