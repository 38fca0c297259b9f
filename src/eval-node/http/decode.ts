/**
 * Body decoding of `/flags` and `/decide` as PostHog's Rust service does it
 * (research/posthog-flag-evaluation.md §5.1 "Body decoding", Rust `handler/decoding.rs`):
 *
 * - `application/x-www-form-urlencoded`: percent-decode, take the text after `data=` (the prefix
 *   is optional), base64-decode, parse JSON. gzip is refused here (posthog-js sends this in its
 *   `compression: base64` mode). Beyond Rust: when that fails, the percent-decoded text is tried
 *   as plain JSON (old clients' `data=<url-encoded JSON>`).
 * - anything else (`application/json`, `text/plain`, none): gunzip when `compression=gzip|gzip-js`,
 *   `Content-Encoding` contains gzip, or the body starts with the gzip magic `1f 8b`; parse JSON
 *   (lenient: bare `NaN`/`Infinity` become null; invalid UTF-8 decoded lossily); when that fails,
 *   percent-decode, strip whitespace, pad to a multiple of 4, base64-decode and parse again.
 *
 * Every failure is a {@link DecodeError} (400 `request_decoding_error` or `request_parsing_error`,
 * 413 `payload_too_large`); nothing here throws anything else. Bounds: the
 * decoded body (after gunzip or base64) may not exceed `maxBytes`, so a small gzip bomb cannot
 * inflate; text nesting deeper than {@link MAX_BODY_DEPTH} or holding more than
 * MAX_BODY_MEMBERS (limits.ts) array elements and object members is refused with 400
 * `request_decoding_error` before it is parsed, in one pass (json-scan.ts FLAGS_BODY_BUDGET);
 * the `NaN`/`Infinity` retry is one linear pass.
 */
import zlib from 'node:zlib';
import { checkJsonBudget, describeExcess } from '../../json-budget.js';
import { FLAGS_BODY_BUDGET } from '../json-scan.js';

/**
 * Deepest body accepted: room for the request envelope around property values bounded by
 * MAX_JSON_DEPTH, far below what costs anything to parse.
 */
export const MAX_BODY_DEPTH = FLAGS_BODY_BUDGET.maxDepth;

/** Why a body was refused: the code is PostHog's, the message goes into `detail`. */
export class DecodeError extends Error {
  constructor(readonly code: 'request_decoding_error' | 'request_parsing_error' | 'payload_too_large', message: string) {
    super(message);
    this.name = 'DecodeError';
  }
}

/** `compression` query values PostHog accepts (anything else → 400 "Unsupported compression type"). */
export type Compression = 'gzip' | 'base64' | null;

/**
 * Validates the `compression` query value (`gzip`, `gzip-js`, `base64`; empty or absent → null).
 * @throws DecodeError on any other value (lz64 included: Rust has no lz64 decoder).
 */
export function parseCompression(raw: string): Compression {
  if (raw === '') return null;
  const v = raw.toLowerCase();
  if (v === 'gzip' || v === 'gzip-js') return 'gzip';
  if (v === 'base64') return 'base64';
  throw new DecodeError('request_decoding_error', `Unsupported compression type: ${raw}`);
}

/** What the decoder needs from the request besides the bytes (read before any async work). */
export interface BodyMeta {
  contentType: string;
  contentEncoding: string;
  compression: Compression;
}

/** Decodes a /flags body into a JSON value (not yet checked to be an object). @throws DecodeError. */
export function decodeBody(body: Buffer, meta: BodyMeta, maxBytes: number): unknown {
  if (body.length > maxBytes) throw tooLarge(maxBytes);
  const ct = meta.contentType.toLowerCase();
  if (ct.startsWith('application/x-www-form-urlencoded')) return decodeForm(body);
  let bytes = body;
  if (meta.compression === 'gzip' || meta.contentEncoding.toLowerCase().includes('gzip') || isGzip(bytes)) {
    bytes = gunzip(bytes, maxBytes);
  }
  const text = bytes.toString('utf8');
  const direct = parseJsonLenient(text);
  if (direct.ok) return direct.value;
  // Over budget as JSON: decoding the same text as base64 cannot give a smaller JSON body worth trying.
  if (direct.overBudget) throw new DecodeError('request_decoding_error', `Failed to decode request: ${direct.error}`);
  const viaBase64 = parseJsonLenient(base64Text(text));
  if (viaBase64.ok) return viaBase64.value;
  throw new DecodeError('request_decoding_error', `Failed to decode request: ${direct.error}`);
}

function isGzip(b: Buffer): boolean {
  return b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
}

function tooLarge(maxBytes: number): DecodeError {
  return new DecodeError('payload_too_large', `Request body is larger than ${maxBytes} bytes once decoded.`);
}

function gunzip(b: Buffer, maxBytes: number): Buffer {
  try {
    return zlib.gunzipSync(b, { maxOutputLength: maxBytes });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(maxBytes);
    throw new DecodeError('request_decoding_error', `Failed to decompress gzip body: ${(e as Error).message}`);
  }
}

function decodeForm(body: Buffer): unknown {
  let text = percentDecode(body.toString('utf8'));
  if (text.startsWith('data=')) text = text.slice(5);
  const bytes = base64Bytes(text);
  if (isGzip(bytes)) throw new DecodeError('request_decoding_error', 'gzip is not supported in form-encoded bodies');
  const parsed = parseJsonLenient(bytes.toString('utf8'));
  if (parsed.ok) return parsed.value;
  // Some old clients post `data=<url-encoded JSON>` without base64: accept it too.
  const plain = parseJsonLenient(text);
  if (plain.ok) return plain.value;
  throw new DecodeError('request_decoding_error', `Failed to decode form data: ${parsed.error}`);
}

/** `%XX` sequences → bytes (UTF-8); malformed sequences are kept as written. `+` stays `+` (base64 alphabet). */
export function percentDecode(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
}

function base64Bytes(text: string): Buffer {
  let t = text.replace(/\s+/g, '');
  if (t.length % 4 !== 0) t += '='.repeat(4 - (t.length % 4));
  return Buffer.from(t, 'base64');
}

function base64Text(text: string): string {
  return base64Bytes(percentDecode(text)).toString('utf8');
}

type Parsed = { ok: true; value: unknown } | { ok: false; error: string; overBudget?: true };

/**
 * JSON.parse, then (only if that failed and the text mentions them) a second try with bare
 * `NaN`, `Infinity` and `-Infinity` tokens outside strings replaced by null, as Rust's json5
 * parser reads them. Text over FLAGS_BODY_BUDGET (depth, members) is not parsed at all
 * (`overBudget`).
 */
export function parseJsonLenient(text: string): Parsed {
  const excess = checkJsonBudget(text, FLAGS_BODY_BUDGET);
  if (excess !== null) return { ok: false, error: describeExcess(excess), overBudget: true };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    const error = (e as Error).message;
    if (!/NaN|Infinity/.test(text)) return { ok: false, error };
    try {
      return { ok: true, value: JSON.parse(nullifyNonFinite(text)) };
    } catch {
      return { ok: false, error };
    }
  }
}

/** The text with `NaN`, `Infinity`, `-Infinity` outside strings replaced by `null`; one pass, slices copied whole. */
function nullifyNonFinite(text: string): string {
  const parts: string[] = [];
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) { inString = true; continue; }
    const len = c === 0x4e && text.startsWith('NaN', i) ? 3
      : c === 0x49 && text.startsWith('Infinity', i) ? 8
        : c === 0x2d && text.startsWith('-Infinity', i) ? 9 : 0;
    if (len === 0) continue;
    parts.push(text.slice(from, i), 'null');
    i += len - 1;
    from = i + 1;
  }
  parts.push(text.slice(from));
  return parts.join('');
}
