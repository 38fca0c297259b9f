/**
 * The event shape that travels from an evaluation node's capture outbox to the control plane
 * (gRPC `Ingest`, msgpack), and its defensive normalisation on arrival.
 *
 * Nodes validate events before accepting them (spec §4.5); the control plane re-checks the
 * few fields it relies on so that one malformed event can never block a batch: such events
 * are counted as `invalid` and skipped, the rest of the batch is ingested.
 */

import { setOwn } from '../own-property.js';

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

/**
 * Longest event name and distinct id stored, in characters (PostHog truncates both to 200).
 * Also keeps btree index entries far below Postgres' ~2.7 kB limit: an over-long key would
 * fail the whole batch and wedge the node's outbox.
 */
export const MAX_NAME_CHARS = 200;
/** Longest group type / group key / flag key ingestion acts on (longer ones are ignored). */
export const MAX_KEY_CHARS = 400;

/**
 * Text Postgres accepts: NUL becomes U+FFFD (text and jsonb reject it) and lone surrogates
 * become U+FFFD (jsonb rejects their escapes; PostHog capture `invalid_surrogates` pass).
 */
export function cleanText(s: string): string {
  if (!UNSTORABLE_RE.test(s)) return s; // common case: no copy
  return s.replace(UNSTORABLE_G, '\uFFFD');
}

/** NUL, or a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSTORABLE = '\\u0000|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';
const UNSTORABLE_RE = new RegExp(UNSTORABLE);
const UNSTORABLE_G = new RegExp(UNSTORABLE, 'g');

/**
 * {@link cleanText} applied to every string and key of a JSON-like value (returns a copy of
 * objects and arrays; a `__proto__` key stays an own property). Recursive: callers bound the
 * depth first (MAX_PAYLOAD_DEPTH at decode).
 */
export function cleanJson(v: unknown): unknown {
  if (typeof v === 'string') return cleanText(v);
  if (Array.isArray(v)) return v.map(cleanJson);
  if (isObject(v)) {
    const out: Properties = {};
    for (const k of Object.keys(v)) setOwn(out, cleanText(k), cleanJson(v[k]));
    return out;
  }
  return v;
}

/** Truncates to `max` characters (code points) after cleaning. */
function clip(s: string, max: number): string {
  const c = cleanText(s);
  return c.length <= max ? c : [...c].slice(0, max).join('');
}

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
 * (PostHog does the same); `$set` / `$set_once` at the top level are merged into properties;
 * text is made storable ({@link cleanJson}) and names / distinct ids are clipped to
 * {@link MAX_NAME_CHARS}.
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
  const year = ts.getUTCFullYear();
  if (year < 1 || year > 9999) return null; // outside what Postgres and PostHog accept
  const properties: Properties = isObject(raw.properties) ? cleanJson(raw.properties) as Properties : {};
  if (isObject(raw.$set)) properties.$set = { ...(isObject(properties.$set) ? properties.$set : {}), ...cleanJson(raw.$set) as Properties };
  if (isObject(raw.$set_once)) {
    properties.$set_once = { ...(isObject(properties.$set_once) ? properties.$set_once : {}), ...cleanJson(raw.$set_once) as Properties };
  }
  return {
    uuid: uuid.toLowerCase(), projectId, event: clip(event, MAX_NAME_CHARS), distinctId: clip(distinctId, MAX_NAME_CHARS), properties, timestamp: ts,
  };
}
