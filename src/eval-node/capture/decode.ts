/**
 * Request-body decoding of PostHog's capture endpoints (PostHog `rust/capture`
 * `payload/common.rs` `extract_payload_bytes`, `v0_request.rs` `RawRequest::from_bytes`):
 *
 * 1. the payload is the body, or for GET-style calls the `data` query parameter;
 * 2. a body that is entirely base64 (and not a form) is base64-decoded optimistically;
 * 3. `application/x-www-form-urlencoded` bodies carry the payload in `data` (and a
 *    `compression` hint); base64 in `data` gets its `+` back (form decoding turned them to spaces);
 * 4. `compression` = `gzip` / `gzip-js`, or gzip magic bytes → gunzip; `base64` → base64;
 * 5. the result is UTF-8 JSON.
 * `lz64` (lz-string) is not supported: 400, like an unknown encoding.
 */
import zlib from 'node:zlib';
import { checkJsonBudget, describeExcess, type JsonBudgetExcess } from '../../json-budget.js';
import { CAPTURE_BODY_BUDGET } from '../json-scan.js';

/** A decoding failure; `message` follows capture-rs wording. */
export class CaptureDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaptureDecodeError';
  }
}

const FORM_MIME = 'application/x-www-form-urlencoded';
const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;
const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** Default largest decoded payload, in bytes (config: SWITCHYARD_MAX_CAPTURE_BODY_BYTES). */
export const MAX_DECOMPRESSED_BYTES = 20 * 1024 * 1024;

/** The decoded payload is larger than allowed (→ 413). */
export class CaptureTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`payload is larger than ${limitBytes} bytes once decoded`);
    this.name = 'CaptureTooLargeError';
  }
}

/**
 * The decoded payload holds more array elements and object members, or more events, than
 * CAPTURE_BODY_BUDGET allows (→ 413; found before parsing, json-scan.ts).
 */
export class CaptureOverBudgetError extends Error {
  constructor(readonly excess: JsonBudgetExcess) {
    super(`payload ${describeExcess(excess)}`);
    this.name = 'CaptureOverBudgetError';
  }
}

function isGzip(b: Buffer): boolean {
  return b.length >= 2 && b[0] === GZIP_MAGIC_0 && b[1] === GZIP_MAGIC_1;
}

/** Strict base64 check: only base64 alphabet (standard or url-safe), optional padding, length ≥ 4. */
function isLikelyBase64(b: Buffer | string): boolean {
  const s = (typeof b === 'string' ? b : b.toString('latin1')).trim();
  return s.length >= 4 && /^[A-Za-z0-9+/_-]+={0,2}$/.test(s);
}

function isLikelyForm(b: Buffer): boolean {
  const s = b.subarray(0, 64).toString('latin1');
  return /^[A-Za-z0-9_.\-%]+=/.test(s);
}

function gunzip(b: Buffer, maxBytes: number): Buffer {
  try {
    return zlib.gunzipSync(b, { maxOutputLength: maxBytes });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new CaptureTooLargeError(maxBytes);
    throw new CaptureDecodeError('failed to decode request: invalid gzip data');
  }
}

function base64(b: Buffer | string): Buffer {
  const s = (typeof b === 'string' ? b : b.toString('latin1')).trim();
  return Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/**
 * Decodes a capture request into its JSON value.
 * @param body raw request body (possibly empty)
 * @param query the request's query string (`data`, `compression`)
 * @param contentType the `Content-Type` header
 * @param maxBytes largest decoded payload (a 65 KB gzip can inflate to 64 MiB)
 * @throws CaptureDecodeError (→ 400) for an empty payload, bad gzip, non-UTF-8, invalid JSON or
 * JSON nested deeper than MAX_PAYLOAD_DEPTH; CaptureOverBudgetError (→ 413) for more members or
 * events than CAPTURE_BODY_BUDGET (both refused before parsing, in one pass over the text);
 * CaptureTooLargeError (→ 413).
 */
export function decodeCaptureBody(body: Buffer, query: URLSearchParams, contentType: string | undefined, maxBytes: number = MAX_DECOMPRESSED_BYTES): unknown {
  let payload: Buffer;
  const queryData = query.get('data');
  if (queryData !== null && queryData.length > 0) payload = Buffer.from(queryData, 'utf8');
  else if (body.length > 0) payload = body;
  else throw new CaptureDecodeError('failed to decode request: empty payload');

  // Cheap first-byte test before the full-body base64 scans: most bodies are plain JSON.
  if (!isLikelyJsonStart(payload) && !isLikelyForm(payload) && isLikelyBase64(payload)) {
    const decoded = base64(payload);
    if (decoded.length > 0) payload = decoded;
  }
  let compression = (query.get('compression') ?? '').toLowerCase();
  const mime = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (mime === FORM_MIME && isLikelyForm(payload)) {
    const form = new URLSearchParams(payload.toString('utf8'));
    let data = form.get('data');
    if (data !== null) {
      if (isLikelyBase64(data.replace(/ /g, '+'))) data = data.replace(/ /g, '+');
      payload = Buffer.from(data, 'utf8');
    }
    compression = (form.get('compression') ?? compression).toLowerCase();
  } else if (mime === FORM_MIME && !isLikelyGzipOrJson(payload)) {
    throw new CaptureDecodeError('failed to decode request: expected form data in POST request payload');
  }
  if (compression === 'lz64' || compression === 'lz-string') {
    throw new CaptureDecodeError(`failed to decode request: unsupported compression ${compression}`);
  }

  if (compression === 'gzip' || compression === 'gzip-js' || isGzip(payload)) {
    payload = gunzip(payload, maxBytes);
  } else if (!isLikelyJsonStart(payload) && isLikelyBase64(payload)) {
    // `compression=base64`, or base64 that came out of a form's `data` (a body that was base64
    // as a whole was decoded in step 2 already, so the hint alone must not decode twice).
    payload = base64(payload);
    if (isGzip(payload)) payload = gunzip(payload, maxBytes);
  }
  if (payload.length > maxBytes) throw new CaptureTooLargeError(maxBytes);
  let text: string;
  try {
    text = UTF8.decode(payload);
  } catch {
    throw new CaptureDecodeError('failed to decode request: invalid body encoding');
  }
  const excess = checkJsonBudget(text, CAPTURE_BODY_BUDGET);
  if (excess !== null) {
    if (excess.kind === 'depth') throw new CaptureDecodeError(`failed to parse request: ${describeExcess(excess)}`);
    throw new CaptureOverBudgetError(excess);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CaptureDecodeError(`failed to parse request: ${(e as Error).message}`);
  }
}

function isLikelyJsonStart(b: Buffer): boolean {
  for (const c of b) {
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b || c === 0x5b; // { or [
  }
  return false;
}

function isLikelyGzipOrJson(b: Buffer): boolean {
  return isGzip(b) || isLikelyJsonStart(b);
}
