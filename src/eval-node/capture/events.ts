/**
 * From a decoded capture payload to the events a node stores (PostHog `rust/capture`
 * `v0_request.rs`, `api.rs`; timestamps as plugin-server `parseEventTimestamp`):
 *
 * - shapes: one event object, an array of events, or a batch envelope `{batch: [...], api_key |
 *   token, sent_at, historical_migration}`;
 * - token: the envelope's, else each event's `api_key` / `token` / `$token` / `properties.token`;
 *   none → 401, two different ones → 401, malformed → 401;
 * - every event needs a non-empty `event` and a `distinct_id` (or `properties.distinct_id`;
 *   numbers become strings; truncated to 200 characters): one bad event rejects the whole
 *   request (400), nothing is accepted;
 * - `uuid` kept when valid (invalid → 400), else a new UUIDv7-like random uuid; `timestamp`
 *   resolved from `offset`, `timestamp` corrected by the `sent_at` clock skew, or now.
 * Pure apart from uuid generation; `now` is a parameter.
 */
import crypto from 'node:crypto';
import { MAX_DISTINCT_ID_CHARS } from '../../limits.js';

export { MAX_DISTINCT_ID_CHARS };

/** A capture request rejected with a PostHog status (400 / 401) and capture-rs message. */
export class CaptureRequestError extends Error {
  constructor(readonly status: 400 | 401, readonly code: string, message: string) {
    super(message);
    this.name = 'CaptureRequestError';
  }
}

/** An event before its token is resolved to a project. */
export interface CapturedEventDraft {
  uuid: string; event: string; distinct_id: string; properties: Record<string, unknown>; timestamp: string;
  $set?: Record<string, unknown>; $set_once?: Record<string, unknown>;
}

/** Events of a request, before the token is resolved to a project. */
export interface ParsedCapture { token: string; events: CapturedEventDraft[] }

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
/** Longest project token accepted (capture-rs `validate_token`). */
export const MAX_TOKEN_CHARS = 64;
/** Events dated further than this into the future are re-dated to now (plugin-server). */
export const MAX_FUTURE_MS = 23 * 3600_000;

function canonicalUuid(s: string): string {
  const h = s.replace(/-/g, '').toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * A time-ordered random uuid (UUIDv7 layout: 48-bit ms timestamp, version 7, variant 10), built
 * from `crypto.randomUUID()` (served from a cached entropy pool: cheaper than randomBytes).
 */
export function uuidv7(nowMs: number = Date.now()): string {
  const r = crypto.randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V in 8..b
  const ts = nowMs.toString(16).padStart(12, '0');
  return `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7${r.slice(15, 18)}-${r.slice(19)}`;
}

function eventToken(e: Obj): string | null {
  for (const k of ['token', '$token', 'api_key']) if (typeof e[k] === 'string' && e[k]) return e[k] as string;
  const p = e.properties;
  if (isObj(p) && typeof p.token === 'string' && p.token) return p.token;
  return null;
}

function validateToken(token: string): void {
  if (token.length > MAX_TOKEN_CHARS) throw new CaptureRequestError(401, 'invalid_token', 'API key is not valid: too long');
  if (!/^[\x20-\x7e]+$/.test(token)) throw new CaptureRequestError(401, 'invalid_token', 'API key is not valid: not ascii');
  if (token.startsWith('phx_')) throw new CaptureRequestError(401, 'invalid_token', 'API key is not valid: personal api key');
}

function parseDate(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v; // epoch ms
  if (typeof v !== 'string' || v.trim() === '') return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
}

/**
 * plugin-server `parseEventTimestamp`: `offset` (ms before now) wins; else `timestamp`, shifted
 * by the client's clock skew (now − sent_at) when `sent_at` is known and `$ignore_sent_at` is not
 * set; else now. Invalid results, years outside 0..9999 and times > 23 h ahead become now, as
 * plugin-server's `ignored_invalid_timestamp` does: so an offset or timestamp no date can hold
 * (`"offset": 1e300`, beyond JavaScript's ±8.64e15 ms) dates its event now and never fails the
 * request. (capture-rs reads `offset` as an i64 and refuses the whole request when it is not one;
 * here one client's bad clock value loses no event.)
 */
export function resolveTimestamp(e: Obj, nowMs: number, sentAtMs: number | null): number {
  const props = isObj(e.properties) ? e.properties : {};
  const sentAt = props.$ignore_sent_at === true ? null : sentAtMs;
  let t: number | null;
  if (typeof e.offset === 'number' && Number.isFinite(e.offset)) t = nowMs - e.offset;
  else {
    const ts = parseDate(e.timestamp);
    t = ts === null ? nowMs : sentAt !== null ? nowMs + (ts - sentAt) : ts;
  }
  // NaN for any t outside the Date range (infinities included): every comparison below is false for it.
  const year = new Date(t).getUTCFullYear();
  if (Number.isNaN(year) || year < 0 || year > 9999 || t - nowMs > MAX_FUTURE_MS) return nowMs;
  return t;
}

function distinctIdOf(e: Obj): string {
  let raw = e.distinct_id;
  if (raw === undefined || raw === null) raw = isObj(e.properties) ? e.properties.distinct_id : undefined;
  if (raw === undefined || raw === null) throw new CaptureRequestError(400, 'missing_distinct_id', 'event submitted without a distinct_id');
  const s = typeof raw === 'string' ? raw : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : JSON.stringify(raw);
  if (s.length === 0) throw new CaptureRequestError(400, 'empty_distinct_id', 'event submitted with an empty distinct_id');
  return s.length <= MAX_DISTINCT_ID_CHARS ? s : [...s].slice(0, MAX_DISTINCT_ID_CHARS).join('');
}

/**
 * Legacy `/engage` payloads (person updates from old posthog-js: `{$set, $token, $distinct_id}`)
 * as events: PostHog names them `$identify` and reads `$distinct_id`. Other fields are kept;
 * anything that is not an object is left for parseCapturePayload to refuse.
 */
export function engageAsEvents(payload: unknown): unknown {
  const one = (e: unknown): unknown => {
    if (!isObj(e)) return e;
    const out: Obj = { ...e };
    if (out.event === undefined) out.event = '$identify';
    if (out.distinct_id === undefined && out.$distinct_id !== undefined) out.distinct_id = out.$distinct_id;
    return out;
  };
  if (Array.isArray(payload)) return payload.map(one);
  if (isObj(payload) && Array.isArray(payload.batch)) return { ...payload, batch: payload.batch.map(one) };
  return one(payload);
}

/**
 * Validates a decoded payload and builds its events.
 * @param sentAtQueryMs the request's `_` query parameter (client send time, ms), if any
 * @throws CaptureRequestError 400 (shape, event name, distinct id, uuid) or 401 (token).
 */
export function parseCapturePayload(payload: unknown, nowMs: number, sentAtQueryMs: number | null): ParsedCapture {
  let raw: unknown[];
  let batchToken: string | null = null;
  let batchSentAt: number | null = null;
  if (Array.isArray(payload)) raw = payload;
  else if (isObj(payload) && Array.isArray(payload.batch)) {
    raw = payload.batch;
    batchToken = eventToken({ token: payload.token, $token: payload.$token, api_key: payload.api_key });
    batchSentAt = parseDate(payload.sent_at);
  } else if (isObj(payload)) raw = [payload];
  else throw new CaptureRequestError(400, 'invalid_payload', 'failed to parse request: expected an event, an array of events or a batch');
  if (raw.length === 0) throw new CaptureRequestError(400, 'empty_batch', 'request holds no event');

  const tokens = new Set<string>();
  if (batchToken === null) {
    for (const e of raw) if (isObj(e)) { const t = eventToken(e); if (t) tokens.add(t); }
  }
  if (batchToken === null && tokens.size === 0) throw new CaptureRequestError(401, 'no_token', 'event submitted without an api_key');
  if (tokens.size > 1) throw new CaptureRequestError(401, 'multiple_tokens', 'batch submitted with inconsistent api_key values');
  const token = batchToken ?? [...tokens][0]!;
  validateToken(token);

  const events: CapturedEventDraft[] = [];
  for (const e of raw) {
    if (!isObj(e)) throw new CaptureRequestError(400, 'invalid_payload', 'failed to parse request: an event must be an object');
    if (typeof e.event !== 'string' || e.event.length === 0) {
      throw new CaptureRequestError(400, 'missing_event_name', 'event submitted with an empty event name');
    }
    const distinctId = distinctIdOf(e);
    let uuid: string;
    if (e.uuid === undefined || e.uuid === null) uuid = uuidv7(nowMs);
    else if (typeof e.uuid === 'string' && UUID_RE.test(e.uuid)) uuid = canonicalUuid(e.uuid);
    else throw new CaptureRequestError(400, 'invalid_uuid', 'failed to parse request: invalid uuid');
    const sentAt = parseDate(e.sent_at) ?? batchSentAt ?? sentAtQueryMs;
    // The decoded payload is this request's own and nothing else holds it: no copy (a spread of
    // a 50,000-key object costs more than parsing it).
    const properties: Obj = isObj(e.properties) ? e.properties : {};
    const out: CapturedEventDraft = {
      uuid, event: e.event, distinct_id: distinctId, properties,
      timestamp: new Date(resolveTimestamp(e, nowMs, sentAt)).toISOString(),
    };
    if (isObj(e.$set)) out.$set = e.$set;
    if (isObj(e.$set_once)) out.$set_once = e.$set_once;
    events.push(out);
  }
  return { token, events };
}
