/**
 * Capture request handling on an evaluation node (spec §4.5; PostHog `rust/capture`), as a pure
 * function of the request so any HTTP server can call it:
 *
 *   decode (decode.ts) → parse & validate (events.ts) → project by token → durable append → 200
 *
 * Paths: `/i/v0/e/`, `/e/`, `/capture/`, `/batch/`, legacy `/track/` and `/engage/` (person updates, read as `$identify`), and `/s/` (recording snapshots), trailing slash
 * optional. Answers: 200 `{"status": 1}` once every event of the request is in the outbox;
 * 400 for undecodable payloads or any invalid event (nothing is stored: no partial acceptance);
 * 413 `event_too_big` when one event is over {@link MAX_EVENT_BYTES} (the whole request);
 * 413 `payload_too_large` when the decoded body holds more than MAX_CAPTURE_EVENTS events or
 * MAX_CAPTURE_MEMBERS array elements and object members (limits.ts; found before parsing);
 * 400 `invalid_payload` naming the event and field when one breaks the bounds of
 * contract/event-bounds.ts (depth, linked-id length); NUL and
 * lone surrogates in accepted events are replaced by U+FFFD so every 200 can be stored;
 * 401 for a missing, inconsistent, malformed or unknown project token, except that before the
 * node's first complete snapshot (`store.ready()` false) a token it cannot look up yet gets
 * 503 `not_ready` (retry) like /flags, not a 401 that makes clients drop the events; 503 `outbox_full` when
 * the outbox is at `config.maxOutboxBytes`, and 503 `outbox_backlog` for a share of requests
 * growing from 0 at 80 % of it to all at the bound (both with `Retry-After`, outbox.ts); 404 for other paths. The internal event name
 * `$feature_flag_hash_key_override` (contract/override-records.ts) is refused with
 * 400 `reserved_event_name`: such records come only from the node's own /flags path
 * (http/continuity.ts), which appends them with the `$internal` marker no client event carries. Error bodies are PostHog's
 * `{type, code, detail, attr}` with capture-rs's messages as `detail`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError, errors } from '../../errors.js';
import type { CapturedEvent } from '../../contract/events.js';
import { CaptureDecodeError, CaptureOverBudgetError, CaptureTooLargeError, decodeCaptureBody, MAX_DECOMPRESSED_BYTES } from './decode.js';
import { CaptureRequestError, engageAsEvents, parseCapturePayload } from './events.js';
import { OutboxFullError } from './outbox.js';
import { HASH_KEY_OVERRIDE_EVENT } from '../../contract/override-records.js';
import { eventProblem } from '../../contract/event-bounds.js';
import { cleanJson } from '../../contract/events.js';

/** What capture needs from the node: project lookup by API token, and the outbox. */
export interface CaptureStore {
  /** Project id of a project API key (`phc_…`), or null when unknown. */
  projectIdForToken(token: string): number | null | Promise<number | null>;
  /** False until the node holds a complete snapshot (unknown tokens may be valid); absent = ready. */
  ready?(): boolean;
  /**
   * Stores a client request's events durably (sheddable near the bound: outbox.ts); resolves
   * when they are on disk. @throws OutboxFullError.
   */
  append(events: CapturedEvent[]): Promise<void>;
}

/** A reply for the HTTP layer; `headers` as [name, value] pairs (Retry-After). */
export interface CaptureReply { status: number; body: unknown; headers?: [string, string][] }

/** Normalised capture paths (no trailing slash). */
export const CAPTURE_PATHS: ReadonlySet<string> = new Set(['/i/v0/e', '/e', '/capture', '/batch', '/track', '/engage', '/s']);

/**
 * Largest event, in bytes of JSON, like capture-rs's per-event limit (413 `event_too_big`).
 * Every event must fit one Ingest batch (shipper.ts MAX_BATCH_BYTES, under gRPC's 4 MiB
 * message limit), or it could never be delivered and would hold up the outbox behind it.
 */
export const MAX_EVENT_BYTES = 1024 * 1024;

/** How JSON.stringify writes NUL and lone surrogates (or a literal backslash-u text: harmless). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/**
 * `e` with NUL and lone surrogates replaced by U+FFFD in every string and key (what PostHog's
 * plugin-server does with NUL; jsonb refuses both), so an event answered 200 can be stored.
 */
function storable(e: CapturedEvent): CapturedEvent {
  const out = cleanJson(e) as CapturedEvent;
  out.project_id = e.project_id;
  return out;
}

/** capture-rs success body (`CaptureResponseCode::Ok` = 1). */
const OK_BODY = Object.freeze({ status: 1 });

function fail(e: ApiError): CaptureReply {
  return { status: e.status, body: e.toBody() };
}

/**
 * Handles one capture request. `now` (ms) is injectable for tests; `maxBodyBytes` bounds the
 * decoded payload (413 above; config SWITCHYARD_MAX_CAPTURE_BODY_BYTES).
 * Never throws for client errors; rethrows unexpected store failures (the caller answers 500).
 */
export async function handleCapture(path: string, query: URLSearchParams | string, headers: IncomingHttpHeaders,
  body: Buffer, store: CaptureStore, now: number = Date.now(), maxBodyBytes: number = MAX_DECOMPRESSED_BYTES): Promise<CaptureReply> {
  const normalized = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (!CAPTURE_PATHS.has(normalized)) return fail(errors.notFound());
  const q = typeof query === 'string' ? new URLSearchParams(query) : query;
  const contentType = Array.isArray(headers['content-type']) ? headers['content-type'][0] : headers['content-type'];
  let parsed;
  try {
    const decoded = decodeCaptureBody(body, q, contentType, maxBodyBytes);
    const payload = normalized === '/engage' ? engageAsEvents(decoded) : decoded;
    const sentAtQuery = q.get('_');
    parsed = parseCapturePayload(payload, now, sentAtQuery !== null && /^\d+$/.test(sentAtQuery) ? Number(sentAtQuery) : null);
  } catch (e) {
    if (e instanceof CaptureDecodeError) return fail(errors.badRequest('request_decoding_error', e.message));
    if (e instanceof CaptureTooLargeError) return fail(errors.payloadTooLarge(e.limitBytes));
    if (e instanceof CaptureOverBudgetError) return fail(new ApiError(413, 'invalid_request', 'payload_too_large', `${e.message}.`));
    if (e instanceof CaptureRequestError) {
      if (e.status === 401) return fail(errors.invalidToken(e.code === 'no_token' ? 'missing_token' : 'invalid_token', e.message));
      return fail(errors.badRequest(e.code, e.message));
    }
    throw e;
  }
  if (parsed.events.some((e) => e.event === HASH_KEY_OVERRIDE_EVENT)) {
    return fail(errors.badRequest('reserved_event_name', `event name ${HASH_KEY_OVERRIDE_EVENT} is reserved for internal use`));
  }
  for (let i = 0; i < parsed.events.length; i++) {
    const problem = eventProblem(parsed.events[i]!);
    if (problem) {
      return fail(errors.badRequest('invalid_payload', `event ${i} (${JSON.stringify(parsed.events[i]!.event.slice(0, 100))}): ${problem.field} ${problem.reason}`));
    }
  }
  const projectId = await store.projectIdForToken(parsed.token);
  if (projectId === null) {
    if (store.ready && !store.ready()) return fail(errors.unavailable('not_ready', 'This node has not loaded its definitions yet; retry shortly.'));
    return fail(errors.invalidToken('invalid_token', 'API key is not valid: unknown project token'));
  }
  const events: CapturedEvent[] = parsed.events.map((e) => ({ ...e, project_id: projectId }));
  for (let i = 0; i < events.length; i++) {
    const json = JSON.stringify(events[i]);
    if (Buffer.byteLength(json) > MAX_EVENT_BYTES) {
      return fail(new ApiError(413, 'invalid_request', 'event_too_big', `An event is larger than ${MAX_EVENT_BYTES} bytes.`));
    }
    // JSON.stringify escapes exactly NUL and lone surrogates this way (paired ones stay raw):
    // a cheap test for text Postgres cannot store, cleaned only when present.
    if (UNSTORABLE_ESCAPE.test(json)) events[i] = storable(events[i]!);
  }
  try {
    await store.append(events);
  } catch (e) {
    if (e instanceof OutboxFullError) {
      return { ...fail(errors.unavailable(e.stopping ? 'shutting_down' : e.backlog ? 'outbox_backlog' : 'outbox_full', e.message)), headers: [['retry-after', String(e.retryAfterS)]] };
    }
    throw e;
  }
  return { status: 200, body: OK_BODY };
}
